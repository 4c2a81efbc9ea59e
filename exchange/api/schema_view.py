"""The OpenAPI document's endpoint (``/api/v1/schema/``), generated once a process (its
content: ``schema.py``). Not in ``schema.py``: drf-spectacular's views import that module
(the API's ``DEFAULT_SCHEMA_CLASS``) as they load, so it cannot import them."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.utils import translation
from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response


class SchemaView(SpectacularAPIView):
    # A comment, not a docstring: the view's docstring is the schema operation's published
    # description, which stays drf-spectacular's (set below).
    #
    # drf-spectacular's view generates the whole document at every request: about a second
    # of CPU each (the test suite's fuzzer spent 20 s there). The document depends only on
    # the API version and the language asked for (the routes never change while a process
    # runs, and SERVE_PUBLIC makes it the same whoever asks), so each (version, language)
    # is generated once a process. A language Django does not know is generated each time,
    # as before, so that a client cannot fill the cache with names.
    __doc__ = SpectacularAPIView.__doc__  # type: ignore[assignment]  # the stubs type it as the lazy string it was made from

    documents: ClassVar[dict[tuple[str | None, str], Any]] = {}

    def _get_schema_response(self, request: Request) -> Response:
        try:
            language = translation.get_supported_language_variant(
                translation.get_language() or settings.LANGUAGE_CODE
            )
        except LookupError:
            return super()._get_schema_response(request)
        version = self.api_version or request.version or self._get_version_parameter(request)
        key = (version, language)
        if key not in self.documents:
            generator = self.generator_class(
                urlconf=self.urlconf, api_version=version, patterns=self.patterns
            )
            self.documents[key] = generator.get_schema(request=request, public=self.serve_public)
        filename = self._get_filename(request, version)
        return Response(
            data=self.documents[key],
            headers={"Content-Disposition": f'inline; filename="{filename}"'},
        )
