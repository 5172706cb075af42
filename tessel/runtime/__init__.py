"""tessel.runtime (see DESIGN.md section 1)."""
