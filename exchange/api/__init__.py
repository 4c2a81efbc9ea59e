"""The REST API (``/api/v1/``): serializers, views and their error shape."""
