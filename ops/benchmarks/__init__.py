"""The benchmarks behind ``ops/bench`` (``run.py``) and ``ops/bench_live.py``, and the report
they write into docs/benchmarks.md.

Seed 000's experiments (Figures 4 to 7, ``experiments``, ``tables``, ``paper``) and the Spark
matcher beside them (``spark_matcher``); SPEC 9's live benchmark (``live/``), the historic
reads (``history``), the live subscriptions (``subscriptions``, ``subscription_engine``), the
matching index (``index``), the patterns (``patterns``), dissemination (``dissemination``)
and the channel layer's receive (``layer_receive``). ``machine`` and ``timing`` describe and
time a run, ``plots`` and ``report/`` (prose in ``templates/``) write it down.
"""
