"""Rebuild the engine's store from the live orders, if there are any (moved here from 0005).

The rebuild calls the application's services and models as they are today, which read the
columns of 0006 and 0007; a fresh database has no live orders and skips it. A database that
already ran the rebuild in 0005 runs it once more, which changes nothing but takes a moment.
"""

from django.db import migrations


def rebuild(apps, schema_editor):
    Offer, Bid = apps.get_model("exchange", "Offer"), apps.get_model("exchange", "Bid")
    if not (
        Offer.objects.filter(state="open").exists() or Bid.objects.filter(state="active").exists()
    ):
        return
    from django.conf import settings

    # Imported here: a migration module must load without the application's services.
    from exchange.services.matching import engine_rebuild_run

    engine_rebuild_run(settings.MATCHING_STRATEGY)


class Migration(migrations.Migration):
    dependencies = [("exchange", "0007_market_text_limits")]
    operations = [migrations.RunPython(rebuild, migrations.RunPython.noop)]
