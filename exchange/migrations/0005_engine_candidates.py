"""The engine's store now holds candidate constraints (``engine.candidate_constraint``): a
database whose store was filled in the earlier form is rebuilt from its live orders.

A fresh database has no live orders and skips this. The rebuild uses the application's
models, as of the release that brought this migration."""

from django.db import migrations


def rebuild(apps, schema_editor):
    Offer, Bid = apps.get_model("exchange", "Offer"), apps.get_model("exchange", "Bid")
    if not (
        Offer.objects.filter(state="open").exists() or Bid.objects.filter(state="active").exists()
    ):
        return
    from django.conf import settings

    from exchange.services.matching import engine_rebuild_run

    engine_rebuild_run(settings.MATCHING_STRATEGY)


class Migration(migrations.Migration):
    dependencies = [("exchange", "0004_marketday")]
    operations = [migrations.RunPython(rebuild, migrations.RunPython.noop)]
