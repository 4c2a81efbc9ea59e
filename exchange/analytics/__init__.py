"""Nightly market analytics (SPEC 7): a Spark job over the day's rows, written back as
``MarketDay`` rows and drawn as charts on the staff analytics page.

``job`` is the Spark part (no Django); ``services`` runs it for a day and writes the result;
``selectors`` and ``charts`` feed the staff page; ``tasks`` schedules it with Celery beat.
"""
