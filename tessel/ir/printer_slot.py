"""The printer slot: `tessel/__init__` installs the script printer so `str(node)` shows TVMScript.

This keeps `ir` and `tir` from importing `script` (dependency inversion, docs/architecture.md
§1). The slot itself is tessel.support.printer_slot, so that `import tessel` fills it without
loading the IR.
"""

from tessel.support.printer_slot import install_printer, print_node

__all__ = ["install_printer", "print_node"]
