"""Production: every secret from the environment, HTTPS everywhere.

Refuses to start without DJANGO_SECRET_KEY, DJANGO_ALLOWED_HOSTS or DJANGO_TRUSTED_PROXIES;
passes ``manage.py check --deploy``.
"""

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403 - this environment's settings are base's, amended below
from .base import PROXIES_VARIABLE, env, env_bool, env_list

DEBUG = False

_secret = env("DJANGO_SECRET_KEY")
if not _secret:
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set: production settings refuse to start without a secret key."
    )
SECRET_KEY = _secret
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", [])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS is not set (comma-separated host names).")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
if env(PROXIES_VARIABLE) is None:
    raise ImproperlyConfigured(
        f"{PROXIES_VARIABLE} is not set: list the addresses of the reverse proxies in front "
        "of uvicorn (comma-separated), or write none if clients connect to it directly; start "
        "uvicorn with the flags `python -m exchange.settings.proxies` prints for it."
    )

# No SECURE_PROXY_SSL_HEADER: uvicorn sets the scheme from X-Forwarded-Proto, and only on a
# connection from a trusted proxy (exchange/settings/proxies.py); Django reading the header
# itself would believe a client that connects directly.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = int(env("DJANGO_SECURE_HSTS_SECONDS", "31536000") or 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
