"""The web UI (SPEC 6.1): server-rendered pages over the exchange's selectors and services.

``views`` are the pages, ``templatetags`` their helpers; the modules beside them shape what
the pages show or take (the posting form, readable constraints, notifications and alerts,
the "alert me when" shortcuts, a market's daily figures). It never imports the API layer
(an import contract). ``README.md`` says how its JavaScript libraries are installed.
"""
