"""tessel.codegen (see DESIGN.md section 1)."""
