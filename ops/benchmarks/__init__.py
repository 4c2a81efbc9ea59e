"""The modules of ops/bench (seed 000's experiments); run it as ops/bench."""
