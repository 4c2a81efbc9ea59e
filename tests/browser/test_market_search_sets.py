"""Exactly which markets a subject pattern in the market search highlights (SPEC 8.2), on a
small tree with ``*`` and ``>`` at each position; the others stay in the tree, dimmed. Words
beside a pattern narrow the tree as plain searches do, and a malformed pattern is explained
at its character in the whole search text."""

from __future__ import annotations

import re

import pytest
from django.utils.html import escape

from exchange.services.markets import market_create
from tests.factories import PENCILS_SCHEMA

SUBJECTS = [
    "office",
    "office.supplies",
    "office.supplies.pencils",
    "office.tools.staplers",
    "garden.tools",
    "garden.tools.spades",
    "x.y.z.w",
]
LINK = re.compile(
    r'<a class="market-link( match| dim)?" href="[^"]*">\s*<span class="market-main">'
    r'<span class="market-title">[^<]*</span> <code class="market-subject">([^<]*)</code>'
)


@pytest.fixture
def tree(db):
    for subject in SUBJECTS:
        market_create(subject=subject, title=f"Market {subject}", schema=PENCILS_SCHEMA)


def _links(html: str) -> dict[str, str]:
    """Every market in the tree by subject: "match", "dim" or "" (no pattern)."""
    return {subject: kind.strip() for kind, subject in LINK.findall(html)}


@pytest.mark.parametrize(
    ("pattern", "matched"),
    [
        (">", SUBJECTS),
        ("*", ["office"]),
        ("*.*", ["office.supplies", "garden.tools"]),
        ("*.>", [s for s in SUBJECTS if s != "office"]),
        ("*.*.*", ["office.supplies.pencils", "office.tools.staplers", "garden.tools.spades"]),
        ("*.*.*.>", ["x.y.z.w"]),
        ("office.>", ["office.supplies", "office.supplies.pencils", "office.tools.staplers"]),
        ("office.*", ["office.supplies"]),
        ("office.*.pencils", ["office.supplies.pencils"]),
        ("office.supplies.*", ["office.supplies.pencils"]),
        ("office.supplies.>", ["office.supplies.pencils"]),
        ("office.supplies.pencils.>", []),
        ("*.supplies.>", ["office.supplies.pencils"]),
        ("*.tools", ["garden.tools"]),
        ("*.tools.*", ["office.tools.staplers", "garden.tools.spades"]),
        ("*.tools.>", ["office.tools.staplers", "garden.tools.spades"]),
        ("*.*.pencils", ["office.supplies.pencils"]),
        ("garden.>", ["garden.tools", "garden.tools.spades"]),
        ("x.*.z.*", ["x.y.z.w"]),
        ("x.*.*", []),
        ("shop.>", []),
    ],
)
def test_a_pattern_highlights_exactly_its_markets_and_dims_the_rest(client, tree, pattern, matched):
    html = client.get("/", {"q": pattern}).content.decode()
    links = _links(html)
    assert sorted(links) == sorted(SUBJECTS)  # the whole tree stays
    assert sorted(s for s, kind in links.items() if kind == "match") == sorted(matched)
    assert all(kind == "dim" for s, kind in links.items() if s not in matched)
    n = len(matched)
    summary = f"{n} market{'' if n == 1 else 's'} match{'es' if n == 1 else ''} the pattern"
    assert f"{summary} <code>{escape(pattern)}</code>" in html


def test_plain_words_narrow_the_tree_and_dim_nothing(client, tree):
    links = _links(client.get("/", {"q": "tools"}).content.decode())
    assert links == {
        "office.tools.staplers": "",
        "garden.tools": "",
        "garden.tools.spades": "",
    }


def test_words_beside_a_pattern_narrow_the_tree_the_pattern_highlights_in_it(client, tree):
    html = client.get("/", {"q": "tools *.*"}).content.decode()
    assert _links(html) == {
        "office.tools.staplers": "dim",
        "garden.tools": "match",
        "garden.tools.spades": "dim",
    }
    assert "matching “tools”" in html
    assert "1 market with these words matches the pattern <code>*.*</code>" in html


@pytest.mark.parametrize(
    ("query", "character", "message", "excerpt"),
    [
        (
            "foo*",
            4,
            "&#x27;*&#x27; must be a whole token on its own, as in office.*",
            'foo<mark class="err">*</mark>',
        ),
        (
            ">.x",
            1,
            "&#x27;&gt;&#x27; (one or more tokens) may only be the last token of a pattern",
            '<mark class="err">&gt;</mark>.x',
        ),
        (
            "Office.>",
            1,
            "pattern tokens are lower case: write &#x27;office&#x27;",
            '<mark class="err">O</mark>ffice.&gt;',
        ),
        (
            "tools office..>",
            14,
            "empty token in the pattern &#x27;office..&gt;&#x27;: tokens are separated by a "
            "single &#x27;.&#x27;, with no &#x27;.&#x27; at either end",
            'tools office.<mark class="err">.</mark>&gt;',
        ),
        (
            "office.> *.x",
            10,
            "search with one pattern at a time (this is a second one after office.&gt;)",
            'office.&gt; <mark class="err">*</mark>.x',
        ),
    ],
)
def test_a_malformed_pattern_is_explained_at_its_character_in_the_search(
    client, tree, query, character, message, excerpt
):
    response = client.get("/", {"q": query})
    html = response.content.decode()
    assert response.status_code == 200
    assert f"Not a subject pattern: {message} (character {character})." in html
    assert f"<code>{excerpt}</code>" in html
    assert all(kind == "" for kind in _links(html).values())  # nothing highlighted or dimmed


def test_a_pattern_offers_an_alert_on_the_trades_of_its_markets(client, tree):
    html = client.get("/", {"q": "tools *.tools.>"}).content.decode()
    href = html.split('<a class="pattern-alert" href="')[1].split('"')[0]
    assert href == (
        "/alerts/?query=SELECT+subject%2C+price%2C+quantity+WHERE+type+%3D+%27trade%27%2C+"
        "subject+MATCHES+%27%2A.tools.%3E%27&amp;name=Trades+on+%2A.tools.%3E"
    )
    # words alone or a malformed pattern offer none
    assert "pattern-alert" not in client.get("/", {"q": "tools"}).content.decode()
    assert "pattern-alert" not in client.get("/", {"q": "tools.*x"}).content.decode()
