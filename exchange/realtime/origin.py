"""Origin checking for the WebSocket endpoint: a browser may connect only from the site's own
origin, compared as scheme, host and port (as a browser compares origins)."""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

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
    trusted = (urlsplit(o) for o in settings.CSRF_TRUSTED_ORIGINS)
    return any(given == _origin(t.scheme, t.netloc) for t in trusted)


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
