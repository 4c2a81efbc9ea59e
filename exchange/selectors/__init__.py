"""The exchange's reads, one module per subdomain; nothing here writes (an import contract
forbids importing the services).

Markets, orders, history, the event log and live subscriptions, limits, tokens, the staff
dashboard and the health checks each have their module, with SPEC 5.6's visibility rules
applied where the rows are read; ``ui`` gathers the reads of the web UI's pages.
"""
