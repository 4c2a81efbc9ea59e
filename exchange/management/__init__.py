"""The exchange's ``manage.py`` commands (``commands``) and ``offline``, the base of those
that never touch the exchange's tables."""
