"""Create the engine's constraint stores (one PostgreSQL schema per strategy)."""

from django.db import migrations


def create_stores(apps, schema_editor):
    from matching.store import open_store

    schema_editor.connection.ensure_connection()
    for strategy in ("range", "paper"):
        store = open_store(
            schema_editor.connection.connection, strategy=strategy, namespace=f"engine_{strategy}"
        )
        if not store.exists():
            store.create()


def drop_stores(apps, schema_editor):
    from matching.store import open_store

    schema_editor.connection.ensure_connection()
    for strategy in ("range", "paper"):
        open_store(
            schema_editor.connection.connection, strategy=strategy, namespace=f"engine_{strategy}"
        ).drop()


class Migration(migrations.Migration):
    dependencies = [("exchange", "0002_matching_trades_outbox")]
    operations = [migrations.RunPython(create_stores, drop_stores)]
