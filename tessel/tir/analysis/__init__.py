"""Analyses shared by schedule and transform."""
