"""ASGI entry point: HTTP through Django, WebSockets through Channels at /ws/."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exchange.settings.development")

# Django must be set up before the handler, the consumers (and their models) are imported.
django.setup(set_prefix=False)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402 - after django.setup() above
from django.conf import settings  # noqa: E402 - after django.setup() above

from exchange.handler import SyncChainHandler  # noqa: E402 - after django.setup() above

# As many request threads as the admission gate lets requests in (exchange/admission.py).
django_asgi_app = SyncChainHandler(lanes=settings.WEB_IN_FLIGHT)

from exchange.admission import AdmissionGate  # noqa: E402 - after django.setup() above
from exchange.realtime.auth import TokenOrSessionAuthStack  # noqa: E402 - after django.setup() above
from exchange.realtime.departure import DepartureGuard  # noqa: E402 - after django.setup() above
from exchange.realtime.origin import BrowserOriginValidator  # noqa: E402 - after django.setup() above
from exchange.realtime.routing import websocket_urlpatterns  # noqa: E402 - after django.setup() above

application = ProtocolTypeRouter(
    {
        "http": AdmissionGate(
            django_asgi_app, settings.WEB_IN_FLIGHT, body_limit=settings.BODY_MAX_BYTES
        ),
        "websocket": DepartureGuard(
            BrowserOriginValidator(TokenOrSessionAuthStack(URLRouter(websocket_urlpatterns)))
        ),
    }
)
