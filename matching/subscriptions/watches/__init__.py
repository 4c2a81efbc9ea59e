"""Form 4 of SPEC 8.3, watches over the open offers: their clauses and the engine that keeps the
ranked open offers (seed 002's range-min).
"""
