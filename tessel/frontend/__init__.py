"""tessel.frontend (see DESIGN.md section 1)."""
