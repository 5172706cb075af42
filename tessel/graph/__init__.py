"""tessel.graph (see DESIGN.md section 1)."""
