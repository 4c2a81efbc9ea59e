"""Side effects that leave the process, run after commit and never allowed to undo a commit.

The rows they act on (``OrderChange``, ``Notification``) are already durable when these run,
so a failure here (Redis down, say) only delays the work: the beat sweep finds the pending
changes and the undelivered notifications and finishes it. Raising would turn an
acknowledged order into an error response, which is worse than a delay.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

log = logging.getLogger(__name__)


def after_commit(what: str, effect: Callable[[], object]) -> None:
    def run() -> None:
        try:
            effect()
        except Exception:  # see the module docstring
            log.warning("%s failed after commit; the sweep will retry", what, exc_info=True)

    transaction.on_commit(run)
