"""Errors, source spans, data types, identifier sanitising and frozen maps: the bottom layer."""

from tessel.support.dtype import DataType
from tessel.support.errors import InternalError, IRTypeError, TesselError, UserError
from tessel.support.frozen_map import FrozenMap
from tessel.support.names import c_identifier, unique_name
from tessel.support.span import Span

__all__ = [
    "DataType",
    "FrozenMap",
    "IRTypeError",
    "InternalError",
    "Span",
    "TesselError",
    "UserError",
    "c_identifier",
    "unique_name",
]
