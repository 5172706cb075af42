"""tessel.schedule (see DESIGN.md section 1)."""
