"""The `T` namespace of TVMScript: `from tessel.script import tir as T`.

Helpers that make sense on their own (`T.Buffer`, `T.float32(0)`, `T.exp(x)`, `T.max`) build
IR when called from Python; structural ones (`T.grid`, `T.block`, `T.reads`, ...) return the
descriptions in `tessel.script.parser.intents` that the parser turns into statements.
"""

from __future__ import annotations

import builtins
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tessel.ir import builders
from tessel.ir.expr import Broadcast as BroadcastNode
from tessel.ir.expr import Cast as CastNode
from tessel.ir.expr import Div as DivNode
from tessel.ir.expr import FloorDiv as FloorDivNode
from tessel.ir.expr import FloorMod as FloorModNode
from tessel.ir.expr import IntImm, PrimExpr, StringImm, Var
from tessel.ir.expr import Let as LetNode
from tessel.ir.expr import Mod as ModNode
from tessel.ir.expr import Ramp as RampNode
from tessel.ir.expr import Select as SelectNode
from tessel.script.errors import ArgumentError
from tessel.script.parser import intents
from tessel.script.parser.entry import prim_func as prim_func
from tessel.script.tir_gpu import GPU_FUNCTIONS as _GPU_FUNCTIONS
from tessel.script.tir_gpu import comm_reducer as comm_reducer
from tessel.script.tir_gpu import reinterpret as reinterpret
from tessel.script.tir_math import (  # noqa: F401, A004  (the T namespace)
    acos,
    asin,
    atan,
    atan2,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    ceil,
    copysign,
    cos,
    cosh,
    erf,
    exp,
    exp2,
    exp10,
    fabs,
    floor,
    fmod,
    hypot,
    isfinite,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    log10,
    nearbyint,
    pow,
    round,
    rsqrt,
    shift_left,
    shift_right,
    sigmoid,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
)
from tessel.script.tir_math import with_dtype as _with_dtype
from tessel.script.tir_target import target as target
from tessel.support.names import is_c_identifier
from tessel.tir import builtin
from tessel.tir.block import IterVarType
from tessel.tir.buffer import Buffer as _Buffer
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import Evaluate, ForKind

globals().update(_GPU_FUNCTIONS)  # T.ptx_mma, T.tvm_fill_fragment, ... (tir_gpu.py)

# ----------------------------------------------------------------------------- data types
DTypeFunction, HandleFunction = intents.DTypeFunction, intents.HandleFunction

int8, int16, int32, int64 = (DTypeFunction(f"int{b}") for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (DTypeFunction(f"uint{b}") for b in (8, 16, 32, 64))
float16, float32, float64 = (DTypeFunction(f"float{b}") for b in (16, 32, 64))
bfloat16 = DTypeFunction("bfloat16")
bool = DTypeFunction("bool")  # noqa: A001  (TVMScript spells it T.bool)
handle = HandleFunction("handle")


def var(dtype: Any, name: str = "v") -> Var:
    """A fresh variable of `dtype` (`n = T.var("int32")`)."""
    return Var(name, intents.dtype_arg(dtype, "dtype"))


# ----------------------------------------------------------------------------- buffers
class BufferFactory:
    """`T.Buffer((4, 4), "float32")` or the older `T.Buffer[(4, 4), "float32"]`: a Buffer."""

    def __call__(
        self, shape: Any, dtype: Any = "float32", data: Any = None, **options: Any
    ) -> _Buffer:
        spec = intents.buffer_spec("T.Buffer", shape, dtype, data=data, **options)
        return spec.build("buffer")

    def __getitem__(self, key: Any) -> _Buffer:
        shape, dtype = key if isinstance(key, tuple) and len(key) == 2 else (key, "float32")
        return self(shape, dtype)

    def __repr__(self) -> str:
        return "T.Buffer"


Buffer = BufferFactory()


def alloc_buffer(shape: Any, dtype: Any = "float32", **options: Any) -> intents.AllocBufferIntent:
    """A buffer allocated by the enclosing block (the root block at function level)."""
    return intents.AllocBufferIntent(intents.buffer_spec("T.alloc_buffer", shape, dtype, **options))


def match_buffer(
    param: Any, shape: Any, dtype: Any = "float32", data: Any = None, **options: Any
) -> intents.MatchBufferIntent:
    """Bind a buffer to a handle parameter, or (in a block) to a region of another buffer."""
    spec = intents.buffer_spec("T.match_buffer", shape, dtype, data=data, **options)
    return intents.MatchBufferIntent(param, spec)


def decl_buffer(
    shape: Any, dtype: Any = "float32", data: Any = None, **options: Any
) -> intents.DeclBufferIntent:
    """Declare a buffer over `data` (or over a new allocation when no data is given)."""
    spec = intents.buffer_spec("T.decl_buffer", shape, dtype, data=data, **options)
    return intents.DeclBufferIntent(spec)


def allocate(
    extents: Any,
    dtype: Any,
    scope: str = "global",
    condition: Any = True,
    annotations: Mapping[str, Any] | None = None,
) -> intents.AllocateIntent:
    """Memory for the rest of the block; scope "" means "global" (as in TVM)."""
    return intents.AllocateIntent(
        intents.shape_arg("T.allocate", extents, "extents"),
        intents.dtype_arg(dtype, "dtype"),
        scope or "global",
        builders.convert(condition),
        annotations or {},
    )


def allocate_const(
    data: Any,
    dtype: Any,
    extents: Any,
    irmod_storage_idx: int | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> intents.AllocateConstIntent:
    """A constant buffer holding `data`, or referring to the module's "constants" (RFC 22)."""
    element = intents.dtype_arg(dtype, "dtype")
    shape = intents.shape_arg("T.allocate_const", extents, "extents")
    array = None if data is None else np.asarray(data, dtype=element.numpy)
    sizes = [e.value for e in shape if isinstance(e, IntImm)]
    if array is not None and len(sizes) == len(shape):
        if array.size != int(np.prod(sizes)):
            message = f"T.allocate_const got {array.size} values for extents {sizes}"
            raise ArgumentError(message, "data")
        array = array.reshape(sizes)
    return intents.AllocateConstIntent(array, element, shape, irmod_storage_idx, annotations or {})


# ----------------------------------------------------------------------------- loops
def serial(start: Any, stop: Any = None, *, annotations: Any = None) -> intents.LoopIntent:
    """A serial loop over [start, stop) (or [0, start))."""
    return intents.make_loop("T.serial", ForKind.SERIAL, start, stop, annotations=annotations)


def parallel(start: Any, stop: Any = None, *, annotations: Any = None) -> intents.LoopIntent:
    """A parallel loop."""
    return intents.make_loop("T.parallel", ForKind.PARALLEL, start, stop, annotations=annotations)


def vectorized(start: Any, stop: Any = None, *, annotations: Any = None) -> intents.LoopIntent:
    """A vectorized loop."""
    return intents.make_loop(
        "T.vectorized", ForKind.VECTORIZED, start, stop, annotations=annotations
    )


def unroll(start: Any, stop: Any = None, *, annotations: Any = None) -> intents.LoopIntent:
    """An unrolled loop."""
    return intents.make_loop("T.unroll", ForKind.UNROLLED, start, stop, annotations=annotations)


def thread_binding(
    start: Any, stop: Any = None, thread: Any = None, *, annotations: Any = None
) -> intents.LoopIntent:
    """A loop bound to a GPU thread axis; `T.thread_binding(n, thread="threadIdx.x")`."""
    if thread is None and isinstance(stop, str):
        start, stop, thread = start, None, stop
    if not isinstance(thread, str):
        raise ArgumentError('T.thread_binding needs thread="threadIdx.x" (a string)', "thread")
    return intents.make_loop(
        "T.thread_binding",
        ForKind.THREAD_BINDING,
        start,
        stop,
        thread=thread,
        annotations=annotations,
    )


def grid(*extents: Any) -> intents.GridIntent:
    """Nested serial loops from 0, one per extent."""
    if not extents:
        raise ArgumentError("T.grid expects at least one extent, got none", 0)
    return intents.GridIntent(
        tuple(intents.integer_arg("T.grid", "extents", e, i) for i, e in enumerate(extents))
    )


def env_thread(thread_tag: str, dtype: Any = "int32") -> intents.EnvThreadIntent:
    """`tx = T.env_thread("threadIdx.x")`: a thread variable, launched by T.launch_thread."""
    if not isinstance(thread_tag, str):
        raise ArgumentError(f"T.env_thread expects a thread tag string, got {thread_tag!r}", 0)
    return intents.EnvThreadIntent(thread_tag, intents.dtype_arg(dtype, "dtype"))


def launch_thread(thread: Any, extent: Any) -> intents.LaunchThreadIntent:
    """`bx = T.launch_thread("blockIdx.x", 128)` or `T.launch_thread(tx, 64)`: run the rest
    of the block on `extent` threads of that axis (a "thread_extent" attribute)."""
    if not isinstance(thread, str | Var):
        message = f"T.launch_thread expects a thread tag or an env_thread variable, got {thread!r}"
        raise ArgumentError(message, 0)
    return intents.LaunchThreadIntent(
        thread, intents.integer_arg("T.launch_thread", "extents", extent, 1)
    )


# ----------------------------------------------------------------------------- blocks
def block(name: str = "", no_realize: Any = False) -> intents.BlockIntent:
    """`with T.block("name"):` opens a block."""
    if not isinstance(name, str):
        raise ArgumentError(f"T.block expects a string name, got {name!r}", "name")
    return intents.BlockIntent(name)


sblock = block  # TVM's newer spelling


def init() -> intents.InitIntent:
    """`with T.init():` holds the block's reduction initialisation."""
    return intents.InitIntent()


def where(condition: Any) -> intents.WhereIntent:
    """The block's predicate: iterations where it is false are skipped."""
    cond = builders.convert(condition)
    if not cond.dtype.is_bool:
        raise ArgumentError(f"T.where expects a bool condition, got {cond.dtype}", 0)
    return intents.WhereIntent(cond)


def reads(*regions: Any) -> intents.RegionsIntent:
    """The regions the block reads (a list argument is accepted too)."""
    return intents.RegionsIntent("reads", _regions(regions))


def writes(*regions: Any) -> intents.RegionsIntent:
    """The regions the block writes."""
    return intents.RegionsIntent("writes", _regions(regions))


def _regions(regions: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(regions) == 1 and isinstance(regions[0], list | tuple):
        return tuple(intents.region_of(r, 0) for r in regions[0])
    return tuple(intents.region_of(r, i) for i, r in enumerate(regions))


def block_attr(attrs: Mapping[str, Any]) -> intents.AttrsIntent:
    """Annotations of the enclosing block."""
    if not isinstance(attrs, Mapping):
        raise ArgumentError("T.block_attr expects a dict", 0)
    return intents.AttrsIntent("block", attrs)


def func_attr(attrs: Mapping[str, Any]) -> intents.AttrsIntent:
    """Attributes of the function (`global_symbol` overrides the def's name)."""
    if not isinstance(attrs, Mapping):
        raise ArgumentError("T.func_attr expects a dict", 0)
    symbol = attrs.get("global_symbol")
    if "global_symbol" in attrs and not isinstance(symbol, str):
        raise ArgumentError(
            f"the function attribute `global_symbol` must be a string, got {symbol!r}",
            0,
            hint='e.g. T.func_attr({"global_symbol": "my_kernel"})',
        )
    return intents.AttrsIntent("func", attrs)


class AxisNamespace:
    """`T.axis.spatial / reduce / scan / opaque / remap` (and the S / R shorthands)."""

    @staticmethod
    def _make(kind: IterVarType, dom: Any, binding: Any, dtype: Any) -> intents.AxisIntent:
        value = builders.convert(binding)
        if not intents.is_integer_value(value):
            message = f"a block iterator must be bound to an integer, got {value.dtype}"
            raise ArgumentError(message, 1)
        element = value.dtype if dtype is None else intents.dtype_arg(dtype, "dtype")
        dom_range = intents.domain_arg(dom, element)
        intents.fitting_constant(value, element, "the binding", 1)
        return intents.AxisIntent(kind, dom_range, builders.cast(value, element), element)

    @staticmethod
    def spatial(dom: Any, binding: Any, dtype: Any = None) -> intents.AxisIntent:
        """A data-parallel iterator over `dom` bound to `binding`."""
        return AxisNamespace._make(IterVarType.DATA_PAR, dom, binding, dtype)

    @staticmethod
    def reduce(dom: Any, binding: Any, dtype: Any = None) -> intents.AxisIntent:
        """A reduction iterator."""
        return AxisNamespace._make(IterVarType.COMM_REDUCE, dom, binding, dtype)

    @staticmethod
    def scan(dom: Any, binding: Any, dtype: Any = None) -> intents.AxisIntent:
        """An ordered (scan) iterator."""
        return AxisNamespace._make(IterVarType.ORDERED, dom, binding, dtype)

    @staticmethod
    def opaque(dom: Any, binding: Any, dtype: Any = None) -> intents.AxisIntent:
        """An opaque iterator."""
        return AxisNamespace._make(IterVarType.OPAQUE, dom, binding, dtype)

    S = spatial
    R = reduce

    @staticmethod
    def remap(kinds: Any, bindings: Any, dtype: Any = None) -> tuple[intents.AxisIntent, ...]:
        """One iterator per letter of `kinds` ("S" spatial, "R" reduce), bound to loop vars."""
        letters = {"S": IterVarType.DATA_PAR, "R": IterVarType.COMM_REDUCE}
        if not isinstance(kinds, str) or not isinstance(bindings, list | tuple):
            raise ArgumentError("T.axis.remap expects a string of kinds and a list of loop vars", 0)
        for letter in kinds:
            if letter not in letters:
                raise ArgumentError(
                    f"unknown block axis kind {letter!r} in {kinds!r}",
                    0,
                    hint='use "S" (spatial) or "R" (reduce) for each iterator',
                )
        if len(kinds) != len(bindings):
            raise ArgumentError(
                f"T.axis.remap got {len(kinds)} kinds ({kinds!r}) but {len(bindings)} loop vars", 1
            )
        return tuple(_remapped(letters[k], b, dtype) for k, b in zip(kinds, bindings, strict=True))


def _remapped(kind: IterVarType, binding: Any, dtype: Any) -> intents.AxisIntent:
    if not isinstance(binding, Var):
        raise ArgumentError(f"T.axis.remap binds loop variables only, got `{binding}`", 1)
    element = binding.dtype if dtype is None else intents.dtype_arg(dtype, "dtype")
    return intents.AxisIntent(kind, None, binding, element)


axis = AxisNamespace()


def attr(node: Any, attr_key: str, value: Any) -> intents.AttrIntent:
    """`with T.attr(node, "key", value):` attaches a pragma or hint to its body."""
    if not isinstance(attr_key, str):
        raise ArgumentError("T.attr expects a string key", 1)
    if isinstance(value, str):  # an AttrStmt value is an expression, a string a StringImm
        value = StringImm(value)
    elif isinstance(value, numbers.Real):  # bool, int, float (their names are dtypes here)
        value = builders.convert(value)
    return intents.AttrIntent(node, attr_key, value)


# ----------------------------------------------------------------------------- expressions
def Cast(dtype: Any, value: Any) -> PrimExpr:  # noqa: N802  (TVMScript's name)
    """Convert `value` to `dtype` (always a Cast node, as written)."""
    return CastNode(intents.dtype_arg(dtype, 0), builders.convert(value))


def Select(condition: Any, true_value: Any, false_value: Any) -> PrimExpr:  # noqa: N802
    """`true_value` where `condition` holds else `false_value` (both sides evaluated)."""
    true_expr, false_expr = builders.match_types(true_value, false_value)
    return SelectNode(builders.convert(condition), true_expr, false_expr)


def Ramp(base: Any, stride: Any, lanes: int) -> PrimExpr:  # noqa: N802
    """The vector base, base + stride, ..., base + (lanes - 1) * stride."""
    base_expr, stride_expr = builders.match_types(base, stride)
    return RampNode(base_expr, stride_expr, builtins.int(lanes))


def Broadcast(value: Any, lanes: int) -> PrimExpr:  # noqa: N802
    """A vector of `lanes` copies of `value`."""
    return BroadcastNode(builders.convert(value), builtins.int(lanes))


def let(v: Var, value: Any, body: Any = None) -> Any:
    """The expression `body` with `v` bound to `value`; without a body, the older statement
    form `with T.let(x, value):` (a LetStmt over the with-body)."""
    if not isinstance(v, Var):
        raise ArgumentError(f"T.let binds a variable, got {v!r}", 0)
    if body is None:
        return intents.LetStmtIntent(builders.cast(value, v.dtype), v)
    return LetNode(v, builders.cast(value, v.dtype), builders.convert(body))


def Let(expr: Any, where: Mapping[Var, Any]) -> PrimExpr:  # noqa: N802  (TVMScript's name)
    """TVM's spelling of a let expression: `T.Let(body, where={x: value})`."""
    if not isinstance(where, Mapping) or len(where) != 1:
        raise ArgumentError("T.Let expects where={var: value} with one binding", "where")
    ((v, value),) = where.items()
    return let(v, value, expr)


def LetStmt(  # noqa: N802  (TVMScript's name)
    value: Any, type_annotation: Any = None, *, var: Var | None = None
) -> intents.LetStmtIntent:
    """`x = T.LetStmt(value)`, `with T.LetStmt(value) as x:` or
    `with T.LetStmt(value, var=x):`: a LetStmt binding a variable."""
    expr = builders.convert(value)
    if var is not None and not isinstance(var, Var):
        raise ArgumentError(f"T.LetStmt: var= must be a variable, got {var!r}", "var")
    if type_annotation is not None:
        dtype = intents.dtype_arg(getattr(type_annotation, "dtype", type_annotation), 1)
        expr = builders.cast(expr, dtype)
    if var is not None:
        expr = builders.cast(expr, var.dtype)
    return intents.LetStmtIntent(expr, var)


def _node_as_written(node_cls: type) -> Callable[[Any, Any], PrimExpr]:
    def build(a: Any, b: Any) -> PrimExpr:
        return node_cls(*builders.match_types(a, b))

    build.__name__ = build.__qualname__ = node_cls.__name__
    build.__doc__ = f"A {node_cls.__name__} node as written (not folded or rewritten)."
    return build


# TVMScript's node constructors: Div truncates integers, Mod is the truncating remainder.
Div, Mod = _node_as_written(DivNode), _node_as_written(ModNode)
FloorDiv, FloorMod = _node_as_written(FloorDivNode), _node_as_written(FloorModNode)


def if_then_else(condition: Any, true_value: Any, false_value: Any, dtype: Any = None) -> PrimExpr:
    """`true_value` if `condition` else `false_value`, evaluating only the chosen side."""
    if dtype is not None:  # Python numbers take the given dtype
        element = intents.dtype_arg(dtype, "dtype")
        true_value, false_value = (
            builders.const(v, element) if isinstance(v, int | float) else v
            for v in (true_value, false_value)
        )
    result = builtin.if_then_else(condition, true_value, false_value)
    return _with_dtype("T.if_then_else", result, dtype)


def min(a: Any, b: Any) -> PrimExpr:  # noqa: A001  (TVMScript's name)
    """The smaller of two expressions."""
    return builders.min_value(a, b)


def max(a: Any, b: Any) -> PrimExpr:  # noqa: A001
    """The larger of two expressions."""
    return builders.max_value(a, b)


def abs(x: Any) -> PrimExpr:  # noqa: A001
    """|x|."""
    return builtin.abs_value(x)


floordiv, floormod = builders.floordiv, builders.floormod
truncdiv, truncmod = builders.truncdiv, builders.truncmod


def undef(dtype: Any = "int32") -> PrimExpr:
    """An unspecified value; stored into a buffer it takes the buffer's dtype."""
    return builtin.undef(intents.dtype_arg(dtype, "dtype"))


def assume(condition: Any) -> PrimExpr:
    """A compile-time fact for the analyzer (a buffer constraint)."""
    return builtin.assume(condition)


def likely(condition: Any) -> PrimExpr:
    """`condition`, hinted as usually true."""
    return builtin.likely(condition)


def _extern_call(who: str, args: tuple[Any, ...], dtype: Any, pure: bool) -> PrimExpr:
    """`T.call_extern("float32", "name", *args)` or, as TVM also accepts,
    `T.call_extern("name", *args, dtype="float32")`."""
    first = 0 if dtype is not None else 1  # where the name is among the positional arguments
    if dtype is None:
        if not args:
            raise ArgumentError(f"{who} needs a dtype and a function name", 0)
        dtype = args[0]
    element = intents.dtype_arg(dtype, "dtype" if first == 0 else 0)
    if len(args) <= first or not is_c_identifier(args[first]):
        name = args[first] if len(args) > first else None
        raise ArgumentError(
            f"{who} needs the name of a C function as a string, got {name!r}",
            first,
            hint="a C identifier: ASCII letters, digits and `_`, not starting with a digit, "
            "and not a C keyword",
        )
    return builtin.call_extern(element, args[first], *args[first + 1 :], pure=pure)


def call_extern(*args: Any, dtype: Any = None) -> PrimExpr:
    """A call of an external C function by name: `T.call_extern("float32", "f", x)`."""
    return _extern_call("T.call_extern", args, dtype, pure=False)


def call_pure_extern(*args: Any, dtype: Any = None) -> PrimExpr:
    """A call of an external C function without side effects."""
    return _extern_call("T.call_pure_extern", args, dtype, pure=True)


def call_packed(name: Any, *args: Any, dtype: Any = "int32") -> PrimExpr:
    """A call of a TVM packed function by name (parse and print only: C builds refuse it)."""
    if not isinstance(name, str):
        raise ArgumentError(f"T.call_packed needs a function name string, got {name!r}", 0)
    return builtin.call_packed(name, *args, dtype=intents.dtype_arg(dtype, "dtype"))


def cast(value: Any, dtype: Any) -> PrimExpr:
    """`value` converted to `dtype` (TVM's `T.cast(x, dtype)`: no Cast node if it already is)."""
    return builders.cast(value, intents.dtype_arg(dtype, 1))


def min_value(dtype: Any) -> PrimExpr:
    """The smallest value of `dtype` as a constant (`T.min_value("float32")`)."""
    element = intents.dtype_arg(dtype, 0)
    return builders.const(element.min_value(), element)


def max_value(dtype: Any) -> PrimExpr:
    """The largest value of `dtype` as a constant."""
    element = intents.dtype_arg(dtype, 0)
    return builders.const(element.max_value(), element)


def ret(value: Any, dtype: Any = None) -> PrimExpr:
    """`T.ret(value)`: leave the function, returning `value` (`dtype=` as TVM scripts pass it
    must be the value's dtype; a Python number takes it)."""
    if dtype is not None and isinstance(value, numbers.Real):
        value = builders.const(value, intents.dtype_arg(dtype, "dtype"))
    return _with_dtype("T.ret", builtin.ret(value), dtype)


def type_annotation(dtype: Any) -> PrimExpr:
    """A dtype as an expression (`T.type_annotation("float32")`, in tvm_access_ptr)."""
    return builtin.type_annotation(intents.dtype_arg(dtype, 0))


def tvm_access_ptr(ptype: Any, data: Any, offset: Any, extent: Any, rw_mask: Any) -> PrimExpr:
    """The printed form of `A.access_ptr(...)`."""
    return builtin.access_ptr(ptype, data, offset, extent, rw_mask)


def address_of(load: Any) -> PrimExpr:
    """The address of one buffer element: `T.address_of(A[i])`."""
    if not isinstance(load, BufferLoad):
        raise ArgumentError(f"T.address_of takes a buffer element such as A[i], got {load!r}", 0)
    return builtin.address_of(load)


def meta_var(value: Any) -> intents.MetaVarIntent:
    """`x = T.meta_var(e)`: bind `x` to `e` itself (substituted where used), not a let."""
    return intents.MetaVarIntent(value)


def evaluate(value: Any) -> Evaluate:
    """A statement evaluating `value` for its effect."""
    return Evaluate(builders.convert(value))
