"""``/api/v1/schema/`` (exchange/api/schema_view.py): the document generated once a process for
each version and language, and only the languages Django has translations for ever activated,
whatever a client sends as ``?lang=``."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils.translation import trans_real

from exchange.api.schema_view import SchemaView

URL = "/api/v1/schema/"


@pytest.fixture
def generations(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """An empty cache of documents, and the language of each generation from then on."""
    monkeypatch.setattr(SchemaView, "documents", {})
    made: list[str | None] = []
    generate = SchemaView.generator_class.get_schema

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(trans_real.get_language())
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(SchemaView.generator_class, "get_schema", counted)
    return made


def test_an_unknown_language_gets_the_default_document_and_is_never_activated(client, generations):
    default = client.get(URL)
    assert default.status_code == 200
    known = set(trans_real._translations)
    unknown = [f"q{i}" for i in range(30)] + ["../../etc", "x" * 40, "zz-ZZ", "1"]
    for code in unknown:
        answer = client.get(URL, {"lang": code})
        assert answer.status_code == 200, code
        assert answer.content == default.content, code
    # Django keeps a translation for every code activated, for good: none was added.
    assert set(trans_real._translations) == known
    assert not set(unknown) & set(trans_real._translations)
    assert generations == ["en-us"]


def test_a_variant_of_a_known_language_is_served_as_that_language(client, generations):
    german = client.get(URL, {"lang": "de"})
    variant = client.get(URL, {"lang": "de-xx"})
    upper = client.get(URL, {"lang": "DE"})
    assert german.status_code == variant.status_code == upper.status_code == 200
    assert variant.content == german.content == upper.content
    assert "DE" not in trans_real._translations
    # The language took effect: DRF's own texts are translated.
    assert german.content != client.get(URL).content
    assert "de-xx" not in trans_real._translations
    assert generations == ["de", "en-us"]


def test_the_document_is_generated_once_for_each_language(client, generations):
    for _ in range(3):
        assert client.get(URL).status_code == 200
        assert client.get(URL, {"lang": "fr"}).status_code == 200
        assert client.get(URL, {"lang": "fr-xx", "format": "json"}).status_code == 200
    assert generations == ["en-us", "fr"]
