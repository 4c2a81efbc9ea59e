from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("exchange", "0020_lookup_version"),
    ]

    operations = [
        migrations.AddField(
            model_name="subscriptionpartition",
            name="book",
            field=models.BinaryField(null=True),
        ),
    ]
