"""Origin checking for the WebSocket endpoint: a browser may connect only from the site's own
origin, compared as scheme, host and port (as a browser compares origins), or from one of
``CSRF_TRUSTED_ORIGINS``, wildcards (``https://*.example.com``) matched as Django's CSRF
check matches them.

The connection's scheme is the ASGI scope's: uvicorn sets ``wss`` from ``X-Forwarded-Proto``
only on a connection from a trusted proxy (``exchange/settings/proxies.py``), so behind a TLS
proxy the site's own origin is ``https://...`` and a client cannot claim it directly."""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.http import is_same_domain

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the scheme's default port filled in, or None if malformed."""
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return scheme, parts.hostname, port


def origin_allowed(*, origin: str, host: str, secure: bool) -> bool:
    """True if ``origin`` (the Origin header) is the origin the request was made to (its Host
    header, under http or https as the connection is ws or wss), or one of
    ``CSRF_TRUSTED_ORIGINS``; the host must also be one of ``ALLOWED_HOSTS``."""
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return False
    given = _origin(parsed.scheme, parsed.netloc)
    if given is None:
        return False
    if given == _origin("https" if secure else "http", host):
        return True
    csrf = CsrfViewMiddleware(_no_response)  # its reading of CSRF_TRUSTED_ORIGINS
    trusted = (urlsplit(o) for o in csrf.allowed_origins_exact)
    if any(given == _origin(t.scheme, t.netloc) for t in trusted):
        return True
    subdomains = csrf.allowed_origin_subdomains.get(parsed.scheme, ())
    return any(is_same_domain(parsed.netloc, pattern) for pattern in subdomains)


def _no_response(request):  # pragma: no cover - the middleware is only asked for its settings
    raise AssertionError("not a request path")


class BrowserOriginValidator:
    """Rejects cross-origin browser connections; lets origin-less clients (trading bots) through.

    Browsers always send ``Origin`` on a WebSocket handshake, so a missing header means a
    non-browser client, which authenticates with a token and cannot ride on a victim's cookie.
    """

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers", []))
        origin = headers.get(b"origin")
        if origin is None or origin_allowed(
            origin=origin.decode("latin-1"),
            host=headers.get(b"host", b"").decode("latin-1"),
            secure=scope.get("scheme") == "wss",
        ):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
