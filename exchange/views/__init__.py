"""The exchange's own pages outside the API and the web UI: the staff dashboard and analytics,
the health checks and the error pages."""
