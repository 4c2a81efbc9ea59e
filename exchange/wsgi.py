"""WSGI entry point (management tooling only; the product is served over ASGI)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exchange.settings.development")
application = get_wsgi_application()
