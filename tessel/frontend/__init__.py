"""tessel.frontend (see docs/architecture.md §1)."""
