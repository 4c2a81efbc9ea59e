"""Developer machine: debug on, project-local services, no variables needed."""

from .base import *  # noqa: F403 - this environment's settings are base's, amended below
from .base import env_bool

DEBUG = env_bool("DJANGO_DEBUG", True)

# Serve static files straight from the apps (no collectstatic needed while developing).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

# Webhooks to a receiver on this machine (127.0.0.1) are allowed while developing.
WEBHOOK_ALLOW_LOOPBACK = env_bool("WEBHOOK_ALLOW_LOOPBACK", True)
