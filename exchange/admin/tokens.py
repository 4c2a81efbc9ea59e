"""API tokens in the staff console: DRF's token admin, with deletion routed through
``exchange.services.tokens.token_revoke`` so that a token deleted here closes its open
WebSockets exactly like a revocation from the account page or the API."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework.authtoken import admin as authtoken_admin
from rest_framework.authtoken.models import TokenProxy

from exchange.services.tokens import token_revoke

# Importing DRF's admin module above registered its TokenAdmin; this one takes its place.
admin.site.unregister(TokenProxy)


@admin.register(TokenProxy)
class TokenAdmin(authtoken_admin.TokenAdmin):
    def delete_model(self, request: HttpRequest, obj: TokenProxy) -> None:
        token_revoke(user=obj.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[TokenProxy]) -> None:
        # DRF turns actions off for tokens, so only a custom action would come here.
        for token in queryset.select_related("user").order_by("pk"):
            token_revoke(user=token.user)
