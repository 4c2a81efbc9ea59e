"""Adapters for legacy feeds (SPEC 8.2): a CSV price list or a JSON-lines feed, read row by
row into offers or bids through the order services.

* ``maps``: the map file (which column feeds which attribute, and how), checked against the
  market's schema; without one, columns named like the schema's attributes are equalities.
* ``feeds``: reading a file or a request body into rows, every whole-file problem refused
  before any row is imported.
* ``rows``: one row as a constraint in the JSON form, and which column an error concerns.
* ``imports``: the service that turns rows into orders, one transaction per row, idempotent
  per user by the row's ``ref``.

``docs/adapters.md`` documents the map format with the two samples in ``fixtures/legacy/``.
"""
