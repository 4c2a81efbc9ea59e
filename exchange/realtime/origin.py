"""Origin checking for the WebSocket endpoint."""

from channels.security.websocket import OriginValidator
from django.conf import settings


class BrowserOriginValidator(OriginValidator):
    """Rejects cross-site browser connections; lets origin-less clients (trading bots) through.

    Browsers always send ``Origin`` on a WebSocket handshake, so a missing header means a
    non-browser client, which authenticates with a token and cannot ride on a victim's cookie.
    """

    def __init__(self, application):
        super().__init__(application, settings.ALLOWED_HOSTS)

    def valid_origin(self, parsed_origin):
        if parsed_origin is None:
            return True
        return super().valid_origin(parsed_origin)
