"""A table editor for a market's schema: one row per attribute, blank rows to add new ones."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from matching.model import Type

COLUMNS = ("name", "type", "label", "unit", "required_on_offer", "required_on_bid", "role")
EXTRA_ROWS = 3


class SchemaWidget(forms.Widget):
    def _rows(self, value: Any) -> list[dict]:
        """The stored rows (a list, or its JSON text); anything else reads as none.
        Not ``format_value``: that one returns a string, and ``render`` is ours."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return []
        return value if isinstance(value, list) else []

    def render(self, name, value, attrs=None, renderer=None):
        rows = [r for r in self._rows(value) if isinstance(r, dict)] + [{}] * EXTRA_ROWS
        head = format_html_join(
            "", "<th scope='col'>{}</th>", ((c.replace("_", " "),) for c in COLUMNS)
        )
        body = format_html_join(
            "", "<tr>{}</tr>", ((self._row(name, i, r),) for i, r in enumerate(rows))
        )
        return format_html(
            "<table class='schema-editor'><thead><tr>{}</tr></thead><tbody>{}</tbody></table>"
            "<p class='help'>Fill a blank row to add an attribute; clear its name to remove one.</p>"
            "<input type='hidden' name='{}-rows' value='{}'>",
            head,
            body,
            name,
            len(rows),
        )

    def _row(self, name: str, i: int, row: dict) -> str:
        def cell(column: str, control: str) -> str:
            return format_html("<td>{}</td>", mark_safe(control))  # built with format_html

        key = f"{name}-{i}"
        types = format_html_join(
            "",
            "<option value='{}'{}>{}</option>",
            ((t.value, " selected" if row.get("type") == t.value else "", t.value) for t in Type),
        )
        roles = format_html_join(
            "",
            "<option value='{}'{}>{}</option>",
            (
                (r, " selected" if (row.get("role") or "") == r else "", r or "none")
                for r in ("", "price", "quantity")
            ),
        )
        cells = [
            cell(
                "name",
                format_html(
                    "<input name='{}-name' value='{}' aria-label='name' size='12'>",
                    key,
                    row.get("name", ""),
                ),
            ),
            cell(
                "type",
                format_html("<select name='{}-type' aria-label='type'>{}</select>", key, types),
            ),
            cell(
                "label",
                format_html(
                    "<input name='{}-label' value='{}' aria-label='label' size='18'>",
                    key,
                    row.get("label", ""),
                ),
            ),
            cell(
                "unit",
                format_html(
                    "<input name='{}-unit' value='{}' aria-label='unit' size='8'>",
                    key,
                    row.get("unit", ""),
                ),
            ),
            cell(
                "required_on_offer",
                format_html(
                    "<input type='checkbox' name='{}-required_on_offer' aria-label='required on offer'{}>",
                    key,
                    " checked" if row.get("required_on_offer") else "",
                ),
            ),
            cell(
                "required_on_bid",
                format_html(
                    "<input type='checkbox' name='{}-required_on_bid' aria-label='required on bid'{}>",
                    key,
                    " checked" if row.get("required_on_bid") else "",
                ),
            ),
            cell(
                "role",
                format_html("<select name='{}-role' aria-label='role'>{}</select>", key, roles),
            ),
        ]
        return mark_safe("".join(cells))  # every cell is escaped above

    def value_from_datadict(self, data, files, name):
        try:
            count = min(int(data.get(f"{name}-rows", 0)), 200)
        except ValueError:
            count = 0
        rows = []
        for i in range(count):
            key = f"{name}-{i}"
            attr_name = (data.get(f"{key}-name") or "").strip()
            if not attr_name:
                continue
            rows.append(
                {
                    "name": attr_name,
                    "type": data.get(f"{key}-type") or "",
                    "label": (data.get(f"{key}-label") or "").strip(),
                    "unit": (data.get(f"{key}-unit") or "").strip(),
                    "required_on_offer": bool(data.get(f"{key}-required_on_offer")),
                    "required_on_bid": bool(data.get(f"{key}-required_on_bid")),
                    "role": data.get(f"{key}-role") or None,
                }
            )
        return rows


class SchemaField(forms.Field):
    widget = SchemaWidget

    def to_python(self, value):
        return value if isinstance(value, list) else []
