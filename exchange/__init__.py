"""The Django project and the exchange around the matching core: markets, offers, bids,
matching and trades (SPEC 5), the REST API, the WebSocket streams and the staff console
(SPEC 6), nightly analytics (SPEC 7), the event log, live subscriptions and their engine
(SPEC 8).

Writes go through ``services`` and reads through ``selectors``; ``api``, ``views``,
``realtime``, ``admin``, the Celery tasks and the ``manage.py`` commands are the thin edges
that call them (the import contracts in pyproject.toml keep the layers). ``settings`` holds
each environment's settings, ``celery`` the Celery app exported here.
"""

from .celery import app as celery_app

__all__ = ["celery_app"]
