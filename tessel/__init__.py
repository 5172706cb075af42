"""Tessel: a deep-learning compiler in Python."""
