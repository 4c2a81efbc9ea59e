"""The subscription language's text (SPEC 8.3): tokens, the parser of forms 1, 2 and 4 (form 3's
parser lives in ``patterns``, form 4's clauses in ``watches``), the parsed model, the canonical
printer, and the checks the exchange adds (closed sets).
"""
