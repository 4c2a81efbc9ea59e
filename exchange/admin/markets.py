from __future__ import annotations

from django import forms
from django.contrib import admin

from exchange.errors import InvalidInput
from exchange.market_rules import schema_parse
from exchange.models import Market
from exchange.services.markets import (
    market_change_check,
    market_create,
    market_update,
    subject_check,
)

from .schema_widget import SchemaField


class MarketForm(forms.ModelForm):
    schema = SchemaField(required=True)

    class Meta:
        model = Market
        fields = ["subject", "title", "description", "tick", "pricing", "schema"]

    def clean(self):
        data = super().clean()
        assert data is not None  # ModelForm.clean returns cleaned_data
        try:
            if self.instance.pk is None:
                subject_check(data.get("subject"))
            schema_parse(data.get("schema"))
            if self.instance.pk is not None:
                market_change_check(
                    market=self.instance, schema=data.get("schema"), tick=data.get("tick")
                )
        except InvalidInput as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)
        return data


@admin.register(Market)
class MarketAdmin(admin.ModelAdmin):
    form = MarketForm
    list_display = ["subject", "title", "pricing", "tick", "updated_at"]
    list_filter = ["pricing"]
    search_fields = ["subject", "title", "description"]
    ordering = ["subject"]

    def get_readonly_fields(self, request, obj=None):
        # Every order carries the subject: it never changes once the market exists.
        return ["subject"] if obj is not None else []

    def save_model(self, request, obj, form, change):
        """Through the services, so that staff edits obey the same rules as the API."""
        data = form.cleaned_data
        fields = {k: data[k] for k in ("title", "description", "schema", "tick", "pricing")}
        if change:
            saved = market_update(market_id=obj.pk, **fields)
        else:
            saved = market_create(subject=data["subject"], **fields)
        obj.pk = saved.pk
        obj.refresh_from_db()
