"""``manage.py`` commands: thin wrappers over services, selectors and the matching core
(matching files, workloads and backtests, the subscription engine, demo data, checks)."""
