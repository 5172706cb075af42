"""tessel.arith (see DESIGN.md section 1)."""
