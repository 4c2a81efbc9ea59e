"""Admin bases for the rows the exchange writes itself: staff read them and never add or
edit one by hand (that would bypass the services and the event log)."""

from __future__ import annotations

from django.contrib import admin


class ViewOnlyAdmin(admin.ModelAdmin):
    """Neither added nor edited here; staff may still delete (old cycles, old notifications)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class RecordAdmin(ViewOnlyAdmin):
    """A record others rely on (a trade, a subscription and its outbox): not deleted either."""

    def has_delete_permission(self, request, obj=None):
        return False
