"""The Django project and the exchange domain (markets, offers, bids, trades)."""

from .celery import app as celery_app

__all__ = ["celery_app"]
