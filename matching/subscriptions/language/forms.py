"""The four forms of SPEC 8.3, which every parsed query names as its ``kind``.

A module of its own so that each form's model can name its kind without importing the
others: ``model`` (forms 1, 2 and 4) gathers every form into ``Query`` and so imports
form 3's ``patterns.model``, which must not import ``model`` back.
"""

from __future__ import annotations

import enum


class Kind(enum.Enum):
    """The four forms of SPEC 8.3, by the name the API reports."""

    EVENTS = "events"
    COMPOSITE = "composite"
    PATTERN = "pattern"
    STATE = "state"
