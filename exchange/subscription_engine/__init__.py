"""The subscription engine (SPEC 8.3, issue 35): long-lived processes that keep their live
subscriptions' evaluators in memory in one ``SubscriptionSet`` and follow the event log in
``seq`` order as it is appended: the only way live subscriptions advance (the Celery
advance pass it replaced loaded and stored every subscription's state on every pass).

* ``leases``: the subscriptions fall into partitions (``id % N``); each process claims
  partitions through lease rows in PostgreSQL, renews them, shares them with the other
  live processes and takes over those of a process that stopped renewing.
* ``engine``: one process's memory and its batches. Each batch reads the log once, feeds
  the live set (and, through ``advance_members``, the subscriptions still replaying their
  history or catching up from a checkpoint), and commits the notifications with the
  partitions' cursors in one transaction that first checks the leases are still held.
* ``runner``: the loop of ``manage.py subscription_engine``, woken through Redis after
  each append and each change of a subscription, polling as a safety net.
"""
