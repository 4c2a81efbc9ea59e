"""The guide for bots (``docs/api.md``) as a page of the site, so that the API's docs page
and the site's footer can link to it; the file in the repository stays the one source."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET
from markdown_it import MarkdownIt

from .common import live_context

GUIDE = Path(settings.BASE_DIR) / "docs" / "api.md"


@cache
def guide_html() -> SafeString:
    """docs/api.md as HTML, rendered once per process. Raw HTML in the file is escaped
    (``html`` off), so only Markdown's own markup reaches the page."""
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    return mark_safe(parser.render(GUIDE.read_text(encoding="utf-8")))


@require_GET
def api_guide(request: HttpRequest) -> HttpResponse:
    return render(
        request, "frontend/guide.html", {"guide": guide_html(), **live_context(request, [])}
    )
