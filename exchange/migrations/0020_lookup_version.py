"""The version of the rows that the hot requests look up (tokens, users, markets):
``exchange_lookup_version`` holds one random value that every write to those tables
replaces, in the writing transaction, by a statement trigger (so a bulk ``update()``, the
admin, a shell or plain SQL bump it alike). ``exchange.selectors.lookups`` caches the rows
per process under the value it read and uses them only while the value is the same
(docs/benchmarks.md, issue 36). A random value rather than a counter: a rolled-back write
or a restored table can never bring an old value back for a cache to match."""

from django.conf import settings
from django.db import migrations

TABLES = ["auth_user", "authtoken_token", "exchange_market"]

CREATE = [
    "CREATE TABLE exchange_lookup_version "
    "(id smallint PRIMARY KEY CHECK (id = 1), version uuid NOT NULL)",
    "INSERT INTO exchange_lookup_version (id, version) VALUES (1, gen_random_uuid())",
    """CREATE FUNCTION exchange_lookup_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE exchange_lookup_version SET version = gen_random_uuid() WHERE id = 1;
    RETURN NULL;
END $$""",
]
for table in TABLES:
    CREATE.append(
        f"CREATE TRIGGER {table}_lookup_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
        f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION exchange_lookup_version_bump()"
    )

DROP = [f"DROP TRIGGER {table}_lookup_version ON {table}" for table in TABLES] + [
    "DROP FUNCTION exchange_lookup_version_bump()",
    "DROP TABLE exchange_lookup_version",
]


class Migration(migrations.Migration):
    dependencies = [
        ("exchange", "0019_subscription_engine_leases"),
        ("authtoken", "0004_alter_tokenproxy_options"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunSQL(CREATE, DROP)]
