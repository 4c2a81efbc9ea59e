"""The web UI's views: thin, over the exchange's selectors (reads) and services (writes)."""
