"""The event log (SPEC 8.1): the partitioned ``exchange_event`` table, its counter, and
what ``OrderChange`` keeps for the log.

Django cannot declare a partitioned table, so ``Event`` is created by the usual
``CreateModel`` with the table statement asked to end in ``PARTITION BY RANGE (time)``;
the default partition and the partitions of the next days follow. Best-offer changes made
before this migration are not turned into events by the writer (its mark starts past them).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models.lookups import Exact

EVENT_TABLE = "exchange_event"
PRIVATE_TYPES = ["bid_amended", "bid_filled", "bid_placed", "bid_withdrawn"]


class CreatePartitionedModel(migrations.CreateModel):
    """``CreateModel`` whose table is partitioned by range of its ``time`` column."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        schema_editor.sql_create_table = (
            'CREATE TABLE %(table)s (%(definition)s) PARTITION BY RANGE ("time")'
        )
        try:
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        finally:
            del schema_editor.sql_create_table


def partitions(apps, schema_editor):
    # Imported here: a migration module must load without the application's services.
    from exchange.services.event_partitions import event_partitions_ensure

    event_partitions_ensure()


class Migration(migrations.Migration):
    dependencies = [
        ("exchange", "0008_engine_rebuild"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="orderchange",
            name="event",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="orderchange",
            name="event_owner",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.CreateModel(
            name="EventCounter",
            fields=[
                (
                    "id",
                    models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False),
                ),
                ("last_seq", models.BigIntegerField(default=0)),
                ("last_time", models.DateTimeField(null=True)),
                ("best_change_id", models.BigIntegerField(default=0)),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("id", 1)), name="eventcounter_one_row"
                    )
                ],
            },
        ),
        migrations.RunSQL(
            "INSERT INTO exchange_eventcounter (id, last_seq, best_change_id) "
            "SELECT 1, 0, coalesce(max(id), 0) FROM exchange_bestofferchange",
            migrations.RunSQL.noop,
        ),
        CreatePartitionedModel(
            name="Event",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "seq", "time", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("seq", models.BigIntegerField()),
                ("time", models.DateTimeField()),
                ("type", models.CharField(max_length=20)),
                ("subject", models.CharField(max_length=200)),
                ("data", models.JSONField()),
                (
                    "owner",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "db_table": EVENT_TABLE,
                "indexes": [models.Index(fields=["time"], name="event_time")],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            type__in=[
                                "best_offer",
                                "bid_amended",
                                "bid_filled",
                                "bid_placed",
                                "bid_withdrawn",
                                "offer_amended",
                                "offer_cancelled",
                                "offer_closed",
                                "offer_posted",
                                "offer_withdrawn",
                                "trade",
                            ]
                        ),
                        name="event_type_known",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(type__in=PRIVATE_TYPES, owner__isnull=False)
                        | (~models.Q(type__in=PRIVATE_TYPES) & models.Q(owner__isnull=True)),
                        name="event_owner_iff_private",
                    ),
                    models.CheckConstraint(
                        condition=Exact(
                            models.Func(
                                models.F("data"),
                                function="jsonb_typeof",
                                output_field=models.TextField(),
                            ),
                            "object",
                        )
                        & Exact(
                            models.Func(
                                models.F("data"),
                                models.Value("strict $.* ? (@ == null)"),
                                function="jsonb_path_exists",
                                output_field=models.BooleanField(),
                            ),
                            False,
                        ),
                        name="event_data_object_without_nulls",
                    ),
                ],
            },
        ),
        migrations.RunSQL(
            f"CREATE TABLE {EVENT_TABLE}_default PARTITION OF {EVENT_TABLE} DEFAULT",
            f"DROP TABLE {EVENT_TABLE}_default",
        ),
        migrations.RunPython(partitions, migrations.RunPython.noop),
    ]
