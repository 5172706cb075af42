"""tessel.transform (see DESIGN.md section 1)."""
