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
    # is generated once a process: at most one for each language Django has translations
    # for (about 100, half a MB each), since a code it does not know is served the default
    # language's (``initial``). Should one still arrive, it is generated each time and not
    # kept, so that a client cannot fill the cache with names.
    __doc__ = SpectacularAPIView.__doc__  # type: ignore[assignment]  # the stubs type it as the lazy string it was made from

    documents: ClassVar[dict[tuple[str | None, str], Any]] = {}

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # drf-spectacular activates ``?lang=`` as sent, and Django keeps a translation for
        # every code ever activated (``trans_real._translations``: about 37 KB each, never
        # dropped), so any string a client sends there would stay in the process's memory
        # for good, and cost a generation of the document besides. A code Django has no
        # translation for is served the default language's document, which is what Django
        # renders for it anyway (its fallback); a variant of a known one ("de-xx") is asked
        # for under the code it resolves to ("de"). The query is rewritten here, before
        # ``get`` reads it, so only codes Django supports are ever activated. (Not in an
        # override of ``get``: drf-spectacular documents ``lang`` on its own ``get``.)
        lang = request.GET.get("lang")
        if lang:
            try:
                # Lowercased: Django answers "DE" with "DE", and would keep one translation
                # for each way of writing a code.
                supported: str | None = translation.get_supported_language_variant(lang).lower()
            except LookupError:
                supported = None
            if supported != lang:
                query = request.GET.copy()
                if supported is None:
                    del query["lang"]
                else:
                    query["lang"] = supported
                query._mutable = False  # as Django's own
                # What DRF's ``query_params`` and drf-spectacular's ``get`` read.
                request._request.GET = query  # type: ignore[assignment]  # the stubs type GET as the immutable kind, which is a QueryDict made immutable
        super().initial(request, *args, **kwargs)

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
