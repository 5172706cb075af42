"""tessel.topi (see DESIGN.md section 1)."""
