from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("exchange", "0019_subscription_engine_leases"),
    ]

    operations = [
        migrations.AddField(
            model_name="subscriptionpartition",
            name="book",
            field=models.BinaryField(null=True),
        ),
    ]
