from django.apps import AppConfig


class ExchangeConfig(AppConfig):
    name = "exchange"
    verbose_name = "Intersect exchange"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Connects the receivers that close WebSockets when a login loses its authority; here
        # and not at the top because they import models, which load after the app registry.
        from exchange import receivers  # noqa: F401 - imported for its side effect
