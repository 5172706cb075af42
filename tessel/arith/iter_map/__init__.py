"""Iterator-map detection (TVM's IterMap): are these indices affine splits and fuses of loops?

`detect_iter_map([i * 8 + j], {i: [0, 4), j: [0, 8)})` finds one iterator over [0, 32); `[i // 4,
i % 4]` splits `i`. The result says, per index, which digits of which (fused) input iterators it
takes, which is what layout transformations, blockize and the inversion of index maps need.
The pieces live in the modules of this package; this is the public face.
"""

from tessel.arith.iter_map.detect import detect_iter_map
from tessel.arith.iter_map.expr import (
    CheckLevel,
    IterMapExpr,
    IterMapResult,
    IterMark,
    IterSplitExpr,
    IterSumExpr,
    normalize_iter_map_to_expr,
)
from tessel.arith.iter_map.inverse import IterMapError, inverse_iter_map
from tessel.arith.iter_map.subspace import subspace_divide

__all__ = [
    "CheckLevel",
    "IterMapError",
    "IterMapExpr",
    "IterMapResult",
    "IterMark",
    "IterSplitExpr",
    "IterSumExpr",
    "detect_iter_map",
    "inverse_iter_map",
    "normalize_iter_map_to_expr",
    "subspace_divide",
]
