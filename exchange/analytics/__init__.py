"""Nightly market analytics (SPEC 7): a Spark job over the day's rows, written back as
``MarketDay`` rows and drawn as charts on the staff analytics page and the market pages.

``job`` is the Spark part (no Django); ``services`` runs it for a day and writes the result;
``selectors`` read the rows for the staff page (drawn by ``charts``) and each market's
public figures for its market page (drawn by ``frontend/daily.py`` and ``charts.js``);
``tasks`` schedules it with Celery beat.
"""
