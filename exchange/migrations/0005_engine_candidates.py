"""The engine's store now holds candidate constraints (``engine.candidate_constraint``): a
database whose store was filled in the earlier form is rebuilt from its live orders.

A fresh database has no live orders and skips this. The rebuild uses the application's
models as they are today, so it runs in 0008, after the columns those models read exist
(0006 added the set-aside columns); this step stays as a no-op so that the numbering of
databases that already ran it does not change."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("exchange", "0004_marketday")]
    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
