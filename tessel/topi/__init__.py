"""The operator library (TVM's tvm.topi): operators as tensor-expression computes, with TVM's
names, argument orders and semantics; `topi.nn` and `topi.image` as in TVM."""

from tessel.te.tensor_operators import register_tensor_operators
from tessel.topi import image, nn
from tessel.topi.broadcast import (
    add,
    divide,
    equal,
    floor_divide,
    floor_mod,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    not_equal,
    power,
    subtract,
    where,
)
from tessel.topi.einsum import einsum
from tessel.topi.fill import full, full_like, ones_like, zeros_like
from tessel.topi.indexing import gather, gather_elements, gather_nd, one_hot, take
from tessel.topi.layout import layout_transform
from tessel.topi.math import (
    abs,
    cast,
    ceil,
    clip,
    erf,
    exp,
    floor,
    identity,
    isfinite,
    isinf,
    isnan,
    log,
    negative,
    round,
    rsqrt,
    sigmoid,
    sign,
    sqrt,
    tanh,
    trunc,
)
from tessel.topi.matmul import matmul
from tessel.topi.reduction import (
    all,
    any,
    argmax,
    argmin,
    max,
    mean,
    min,
    prod,
    sum,
    variance,
)
from tessel.topi.scan import cumsum
from tessel.topi.scatter import scatter_elements, scatter_nd
from tessel.topi.tensordot import tensordot
from tessel.topi.transform import (
    broadcast_to,
    concatenate,
    expand_dims,
    repeat,
    reshape,
    split,
    squeeze,
    stack,
    strided_slice,
    tile,
    transpose,
    trilu,
)
from tessel.topi.utils import OperatorError

__all__ = [
    "OperatorError", "abs", "add", "all", "any", "argmax", "argmin", "broadcast_to", "cast", "ceil",
    "clip", "concatenate", "cumsum", "divide", "einsum", "equal", "erf", "exp", "expand_dims",
    "floor", "floor_divide", "floor_mod", "full", "full_like", "gather", "gather_elements",
    "gather_nd", "greater", "greater_equal", "identity", "image", "isfinite", "isinf", "isnan",
    "layout_transform", "less", "less_equal", "log", "logical_and", "logical_not", "logical_or",
    "logical_xor", "matmul", "max", "maximum", "mean", "min", "minimum", "mod", "multiply",
    "negative", "nn", "not_equal", "one_hot", "ones_like", "power", "prod", "repeat", "reshape",
    "round", "rsqrt", "scatter_elements", "scatter_nd", "sigmoid", "sign", "split", "sqrt",
    "squeeze", "stack", "strided_slice", "subtract", "sum", "take", "tanh", "tensordot", "tile",
    "transpose", "trilu", "trunc", "variance", "where", "zeros_like",
]  # fmt: skip

# te.Tensor's Python operators (`A + B`, `-A`, `A.astype(...)`) build these computes, as TVM's topi
# overloads them on import: te is below topi and cannot import it.
register_tensor_operators(
    {
        "add": add,
        "subtract": subtract,
        "multiply": multiply,
        "divide": divide,
        "floor_divide": floor_divide,
        "floor_mod": floor_mod,
        "power": power,
        "negative": negative,
        "cast": cast,
    }
)
