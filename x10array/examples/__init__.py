"""Runnable examples: `python -m x10array.examples.mnist`, `python -m x10array.examples.demo`."""
