"""Template tags and filters of the web UI: error positions, prices and ticks, JSON in
attributes (``intersect``), and the alerts every page shows (``alerts``)."""
