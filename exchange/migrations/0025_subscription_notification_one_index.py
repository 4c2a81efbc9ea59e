"""One index less on ``exchange_subscriptionnotification`` (issue 35): the foreign key's own
index on ``subscription_id`` repeated the first column of the unique ``subscription_n_once``
(``subscription_id``, ``n``), which serves every lookup by subscription, so each
notification the engine inserts wrote three indexes where two do."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("exchange", "0024_subscription_partition_index")]

    operations = [
        migrations.AlterField(
            model_name="subscriptionnotification",
            name="subscription",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="notifications",
                to="exchange.subscription",
            ),
        ),
    ]
