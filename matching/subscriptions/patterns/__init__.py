"""Form 3 of SPEC 8.3, event patterns (seed 003, Cayuga): their model, parser and printer, the
automata they compile to, and the groups that run many similar patterns on one record per start.
"""
