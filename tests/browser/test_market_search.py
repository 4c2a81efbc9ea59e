"""The market search takes subject patterns (SPEC 8.2): ``office.>`` and ``*.tools.*``
highlight the matching markets in the subject tree; a malformed pattern is pointed at."""

from __future__ import annotations

import pytest
from django.utils.html import escape
from playwright.sync_api import expect

from exchange.services.markets import market_create
from tests.factories import PENCILS_SCHEMA

from .conftest import off_loop, screenshot

SUBJECTS = ["office.supplies.pencils", "office.tools.staplers", "garden.tools.spades", "office"]


def _markets() -> None:
    for subject in SUBJECTS:
        market_create(subject=subject, title=f"Market {subject}", schema=PENCILS_SCHEMA)


def _highlighted(html: str) -> list[str]:
    """The subjects of the markets marked as matching, in page order."""
    out = []
    for chunk in html.split('class="market-link match"')[1:]:
        out.append(chunk.split('<code class="market-subject">')[1].split("</code>")[0])
    return out


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "highlighted", "summary"),
    [
        ("office.>", ["office.supplies.pencils", "office.tools.staplers"], "2 markets match"),
        ("*.tools.*", ["garden.tools.spades", "office.tools.staplers"], "2 markets match"),
        ("*", ["office"], "1 market matches"),
        ("  shop.>  ", [], "0 markets match"),
    ],
)
def test_a_pattern_highlights_the_matching_markets_in_the_whole_tree(
    client, query, highlighted, summary
):
    _markets()
    html = client.get("/", {"q": query}).content.decode()
    assert _highlighted(html) == highlighted
    assert f"{summary} the pattern <code>{escape(query.strip())}</code>" in html
    # the whole tree stays on the page
    assert all(f'<code class="market-subject">{s}</code>' in html for s in SUBJECTS)


@pytest.mark.django_db
def test_words_still_narrow_the_tree_and_highlight_nothing(client):
    _markets()
    html = client.get("/", {"q": "tools"}).content.decode()
    assert _highlighted(html) == []
    assert "office.supplies.pencils</code>" not in html
    assert "garden.tools.spades</code>" in html and "office.tools.staplers</code>" in html


@pytest.mark.django_db
def test_a_malformed_pattern_is_pointed_at_and_the_tree_stays_whole(client):
    _markets()
    response = client.get("/", {"q": "office.*x.>"})
    html = response.content.decode()
    assert response.status_code == 200
    assert (
        "Not a subject pattern: &#x27;*&#x27; must be a whole token on its own, as in "
        "office.* (character 8)." in html
    )
    assert '<code>office.<mark class="err">*</mark>x.&gt;</code>' in html
    assert _highlighted(html) == []
    assert all(f'<code class="market-subject">{s}</code>' in html for s in SUBJECTS)


@pytest.mark.stack
@pytest.mark.usefixtures("clean_engine")
def test_typing_a_pattern_highlights_the_matching_markets_in_chromium(new_page, live_stack):
    off_loop(_markets)
    page = new_page()
    page.goto("/")
    search = page.get_by_label("Search markets")
    matches = page.locator("#market-tree .market-link.match .market-subject")

    search.fill("office.>")
    expect(page.locator(".pattern-summary")).to_have_text(
        "2 markets match the pattern office.>, highlighted below. Alert me on their trades"
    )
    expect(matches).to_have_text(["office.supplies.pencils", "office.tools.staplers"])
    expect(page.locator("#market-tree .market-link")).to_have_count(4)
    expect(page.locator("#market-tree .market-link.dim .market-subject")).to_have_text(
        ["garden.tools.spades", "office"]
    )
    screenshot(page, "market-search-pattern")

    search.fill("*.tools.*")
    expect(matches).to_have_text(["garden.tools.spades", "office.tools.staplers"])
    highlighted = page.locator("#market-tree .market-link.match").first
    plain = page.locator("#market-tree .market-link:not(.match)").first
    assert highlighted.evaluate("e => getComputedStyle(e).backgroundColor") != plain.evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )

    search.fill("office.>.x")
    expect(
        page.locator(".pattern-error [role=alert], .pattern-error .field-error")
    ).to_contain_text("may only be the last token of a pattern (character 8)")
    expect(page.locator(".pattern-error mark.err")).to_have_text(">")
    expect(matches).to_have_count(0)
    assert new_page.errors == []
