"""Schedule methods by family, mixed into `Schedule` (each records itself in the trace)."""
