"""Tensor expressions (TVM's tvm.te): tensors defined by index expressions, lowered to TensorIR by
`create_prim_func`, and differentiated by `gradient`."""

from tessel.te.autodiff import NotDifferentiableError, gradient
from tessel.te.create_prim_func import create_prim_func
from tessel.te.math import (
    abs,
    acos,
    asin,
    atan,
    cast,
    ceil,
    cos,
    cosh,
    erf,
    exp,
    exp2,
    floor,
    floordiv,
    floormod,
    fmod,
    if_then_else,
    isnan,
    log,
    log1p,
    log2,
    log10,
    nearbyint,
    power,
    round,
    rsqrt,
    select,
    sigmoid,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
    truncdiv,
    truncmod,
)
from tessel.te.operation import compute, const, placeholder, reduce_axis, size_var, var
from tessel.te.reduction import comm_reducer, max, max_value, min, min_value, prod, sum
from tessel.te.tensor import (
    ComputeOp,
    Operation,
    PlaceholderOp,
    ProducerLoad,
    Tensor,
    TensorIterVar,
)
from tessel.tir.reduce_expr import CommReducer, Reduce

__all__ = [
    "CommReducer", "ComputeOp", "NotDifferentiableError", "Operation", "PlaceholderOp",
    "ProducerLoad", "Reduce", "Tensor", "TensorIterVar", "abs", "acos", "asin", "atan", "cast",
    "ceil", "comm_reducer", "compute", "const", "cos", "cosh", "create_prim_func", "erf", "exp",
    "exp2", "floor", "floordiv", "floormod", "fmod", "gradient", "if_then_else", "isnan", "log",
    "log1p", "log2", "log10", "max", "max_value", "min", "min_value", "nearbyint", "placeholder",
    "power", "prod", "reduce_axis", "round", "rsqrt", "select", "sigmoid", "sin", "sinh",
    "size_var", "sqrt", "sum", "tan", "tanh", "trunc", "truncdiv", "truncmod", "var",
]  # fmt: skip
