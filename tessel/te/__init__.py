"""tessel.te (see DESIGN.md section 1)."""
