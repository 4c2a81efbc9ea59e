"""Evaluating queries over events (SPEC 8.3): the one evaluator, each form's engine, many live
subscriptions together (``multi``), and the limits every subscription is held to.
"""
