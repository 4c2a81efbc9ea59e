from django.apps import AppConfig


class ExchangeConfig(AppConfig):
    name = "exchange"
    verbose_name = "Intersect exchange"
    default_auto_field = "django.db.models.BigAutoField"
