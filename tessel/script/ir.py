"""The `I` namespace of TVMScript: `from tessel.script import ir as I` (`@I.ir_module`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tessel.script.errors import ArgumentError
from tessel.script.parser import intents
from tessel.script.parser.entry import ir_module as ir_module


def module_attrs(attrs: Mapping[str, Any]) -> intents.AttrsIntent:
    """Attributes of the module (a statement in the `@I.ir_module` class body)."""
    if not isinstance(attrs, Mapping):
        raise ArgumentError("I.module_attrs expects a dict", 0)
    return intents.AttrsIntent("module", attrs)
