"""Indexes for historic reads of one market or of some event types, in seq order.

Created on the partitioned parent, so PostgreSQL builds them on every partition and on
each partition created later (services/event_partitions.py).
"""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("exchange", "0013_subscriptions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="event",
            index=models.Index(fields=["subject", "seq"], name="event_subject_seq"),
        ),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(fields=["type", "seq"], name="event_type_seq"),
        ),
    ]
