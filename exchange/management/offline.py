"""The base of the management commands that never touch the exchange's tables.

They read text or files and write to stdout, a file or a constraint store in a schema of
their own, so Django's system checks and its check for unapplied migrations are skipped: such
a command runs, and fails only on its own input, where the exchange's database is not migrated.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand


class OfflineCommand(BaseCommand):
    requires_system_checks: list[str] = []
    requires_migrations_checks = False
