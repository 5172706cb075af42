"""Errors, source spans, data types, identifier sanitising and frozen maps: the bottom layer.

The names below load on first use (PEP 562): `import tessel.support.errors` (what the `tessel`
command needs to start) does not load NumPy and ml_dtypes, as `DataType` does.
"""

import importlib as _importlib
from typing import Any as _Any

# The names re-exported here: name -> the module that defines it.
_EXPORTS = {
    "DataType": "tessel.support.dtype",
    "FrozenMap": "tessel.support.frozen_map",
    "IRTypeError": "tessel.support.errors",
    "InternalError": "tessel.support.errors",
    "Span": "tessel.support.span",
    "TesselError": "tessel.support.errors",
    "UserError": "tessel.support.errors",
    "c_identifier": "tessel.support.names",
    "unique_name": "tessel.support.names",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> _Any:
    """Load a re-exported name on first use (PEP 562)."""
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # found directly from now on
        return value
    try:  # a submodule (`tessel.support.dtype`), as an eager package would have bound it
        return _importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
