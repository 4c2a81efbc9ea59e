"""ASGI entry point: HTTP through Django, WebSockets through Channels at /ws/."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exchange.settings.development")

# Django must be set up before the handler, the consumers (and their models) are imported.
django.setup(set_prefix=False)

from exchange.handler import SyncChainHandler  # noqa: E402

django_asgi_app = SyncChainHandler()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from exchange.admission import AdmissionGate  # noqa: E402
from exchange.realtime.auth import TokenOrSessionAuthStack  # noqa: E402
from exchange.realtime.origin import BrowserOriginValidator  # noqa: E402
from exchange.realtime.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": AdmissionGate(django_asgi_app, settings.WEB_IN_FLIGHT),
        "websocket": BrowserOriginValidator(
            TokenOrSessionAuthStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
