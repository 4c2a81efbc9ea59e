"""Settings split by environment: base, development, test, production (cookiecutter-django style)."""
