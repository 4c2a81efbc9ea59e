"""The live benchmark (SPEC 9) behind ``ops/bench_live.py``, split as the product is:
``provision`` builds the book, ``ops.stack`` runs the processes, ``load`` drives them,
``checks`` reads the outcome back, ``report`` writes it down."""
