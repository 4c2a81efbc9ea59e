"""The exchange's writes, one module per subdomain (STYLE.md, "Where code lives").

Each service is a keyword-only function named ``<thing>_<action>`` that owns its
transaction and runs its side effects (tasks, WebSocket sends, webhooks) after commit
(``side_effects``). Orders, markets, matching and closing, spending limits, the event log,
live subscriptions and their webhooks, tokens and idempotency keys each have their module;
views, consumers, commands and tasks call these instead of writing rows themselves.
"""
