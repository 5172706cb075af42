"""tessel.testing (see DESIGN.md section 1)."""
