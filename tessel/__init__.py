"""Tessel: a deep-learning compiler in Python."""

from tessel.ir.printer_slot import install_printer
from tessel.script.printer import script as _script

install_printer(_script)  # str(node) shows TVMScript (DESIGN §1: the printer slot)

from tessel.driver import build  # noqa: E402  (after the printer slot is filled)
from tessel.transform import lower  # noqa: E402

__all__ = ["build", "lower"]
