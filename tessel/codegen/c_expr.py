"""Printing lowered TensorIR expressions as C expressions with the IR's semantics.

Narrow integer results are cast back to their type (C promotes int8/int16 arithmetic to int),
floor division/modulo and min/max go through prelude helpers, and every subexpression is
parenthesised so C precedence never matters.

Vectors (c_types.py) use GCC vector arithmetic where its semantics are the IR's (`+ - * /`,
truncating division by a safe constant, comparisons as 0/1 masks, `& |` on masks), float
min/max and selects are compare-and-blends (c_select.py); every other vector operation is a
per-lane loop in a statement expression (`({ ... })`) over the scalar C of the operation, so
it has exactly the scalar semantics. Contiguous loads (`Ramp(b, 1, n)`)
copy memory with `__builtin_memcpy` (unaligned); other loads read per lane. A predicated
contiguous load copies too when no lane is disabled (every chunk of a vectorized loop but the
last), else it reads per lane, and a disabled lane never touches memory.

The `tessel.*` builtins, the forms lowering passes give their decisions about C (the clamped
vector exp, the deinterleaved load), are printed by c_tessel_ops.py.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from tessel.arith.dims import ShapeSymbol, compare_dims
from tessel.codegen import c_bfloat16
from tessel.codegen.c_access import BufferAccess, all_lanes_test, masked_copy_helper
from tessel.codegen.c_names import NameScope
from tessel.codegen.c_operands import print_order
from tessel.codegen.c_reinterpret import reinterpret_text
from tessel.codegen.c_select import VectorSelect, blendable
from tessel.codegen.c_tessel_ops import TesselOps
from tessel.codegen.c_types import (
    c_type,
    float_literal,
    int_literal,
    reject_bfloat16_arithmetic,
    reject_vector,
    type_suffix,
)
from tessel.codegen.errors import CodegenError
from tessel.ir import expr as E
from tessel.ir.expr import PrimExpr
from tessel.ir.functor import method_name, post_order
from tessel.support.dtype import DataType
from tessel.support.names import c_string_literal, is_c_identifier
from tessel.tir import builtin
from tessel.tir.buffer import BufferLoad

_INFIX = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.Div: "/", E.Mod: "%"}
_HELPER_OPS = {E.FloorDiv: "floordiv", E.FloorMod: "floormod", E.Min: "min", E.Max: "max"}
_DIVISIONS = {E.Div: "truncdiv", E.Mod: "truncmod", E.FloorDiv: "floordiv", E.FloorMod: "floormod"}
# The per-call status that checked divisions write (c_prelude.py); user names never start with
# `tessel_`, so this name is free in every function.
STATUS = "tessel_status"
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
            "shift_left": "<<", "shift_right": ">>"}  # fmt: skip
# NumPy rounds halfway cases to even; C's round() rounds them away from zero.
_LIBM_NAMES = {"round": "nearbyint"}
_PRELUDE_MATH = ("sigmoid", "rsqrt", "exp10")
_SIMPLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\(?-?[0-9][0-9A-Za-z.+]*\)?")


def is_checked_division(node: object) -> bool:
    """True for an integer division or modulo whose divisor may be 0, or -1 (overflow for the
    minimum of a signed type): C would trap, so it goes through a checked prelude helper."""
    if not isinstance(node, E.BinaryOp) or type(node) not in _DIVISIONS:
        return False
    if not node.dtype.is_integer:
        return False
    divisor = node.b.value if isinstance(node.b, E.Broadcast) else node.b
    if not isinstance(divisor, E.IntImm):
        return not _positive_size(divisor)
    return divisor.value == 0 or (divisor.value == -1 and divisor.dtype.is_int)


@functools.lru_cache(maxsize=4096)
def _positive_size(divisor: E.PrimExpr) -> bool:
    """Whether `divisor` is an expression of shape symbols alone that their bounds prove >= 1
    (a symbolic tile count, (b * s + 7) // 8): the kernel's entry checks the bounds
    (c_source.py), so the division needs no check."""
    if not any(isinstance(n, ShapeSymbol) for n in post_order(divisor)):
        return False
    if any(isinstance(n, E.Var) and not isinstance(n, ShapeSymbol) for n in post_order(divisor)):
        return False
    return compare_dims(">=", divisor, 1) is True


def _positive_constant_divisor(node: E.BinaryOp) -> bool:
    """Whether `node`'s divisor is a positive integer constant, scalar or broadcast."""
    divisor = node.b.value if isinstance(node.b, E.Broadcast) else node.b
    return isinstance(divisor, E.IntImm) and divisor.value > 0


class ExprPrinter(BufferAccess, VectorSelect, TesselOps):
    """C text for expressions, using `names` for variables."""

    def __init__(self, names: NameScope) -> None:
        self.names = names
        self.checked_divisions = 0  # how many checked division helpers were printed
        self.chunk_tables = {}  # N-d allocations (c_access.py), filled as they are printed
        self.exp_floors: list[E.Var] = []  # exp floors printed (c_tessel_ops.py): never NaN
        # The C of the subexpressions of the expression being printed (c_operands.py), emptied
        # when the outermost `expr` call returns: names differ between statements.
        self._printed: dict[PrimExpr, str] = {}
        self._open = 0  # `expr` calls in progress

    def expr(self, node: PrimExpr) -> str:
        """The C expression for `node`; its operands first, bottom-up (c_operands.py)."""
        text = self._printed.get(node)
        if text is not None:
            return text
        self._open += 1
        try:
            for sub in print_order(node, self._printed):
                self._printed[sub] = self._expr_node(sub)
            return self._printed[node]
        finally:
            self._open -= 1
            if self._open == 0:
                self._printed.clear()

    def _expr_node(self, node: PrimExpr) -> str:
        """The C of `node` alone: the `expr` of each walked operand is printed already."""
        method = method_name(type(self), type(node), "expr_")
        if method is None:
            raise CodegenError(
                f"the C backend cannot print `{type(node).__name__}` nodes yet",
                rule="codegen.unsupported-node",
            )
        return getattr(self, method)(node)

    def expr_Var(self, node: E.Var) -> str:
        return self.names.name_of(node)

    def expr_IntImm(self, node: E.IntImm) -> str:
        return int_literal(node.value, node.dtype)

    def expr_FloatImm(self, node: E.FloatImm) -> str:
        return float_literal(node.value, node.dtype)

    def expr_StringImm(self, node: E.StringImm) -> str:
        return c_string_literal(node.value)

    def expr_Cast(self, node: E.Cast) -> str:
        if node.dtype.is_bfloat16 or node.value.dtype.is_bfloat16:
            return self._bfloat16_cast(node)
        if node.dtype.is_vector:
            if "float16" in (str(node.dtype.element), str(node.value.dtype.element)):
                # gcc 12 at -O3 with AVX-512 drops a float -> _Float16 -> float round trip
                # written as lane loops (the value comes back unrounded); its vector
                # conversion rounds as C's cast does.
                text = self.expr(node.value)
                return f"__builtin_convertvector({text}, {c_type(node.dtype)})"
            return self.per_lane(node, (node.value,))
        return f"(({c_type(node.dtype)})({self.expr(node.value)}))"

    def _bfloat16_cast(self, node: E.Cast) -> str:
        """A conversion from or to bfloat16 (c_bfloat16.py), through float32 for other types."""
        if node.value.dtype == node.dtype:
            return self.expr(node.value)
        if c_bfloat16.through_float32(node.value.dtype, node.dtype):
            wide = E.Cast(DataType("float", 32, node.dtype.lanes), node.value)
            return self.expr(E.Cast(node.dtype, wide))
        return c_bfloat16.conversion(node.value.dtype, node.dtype, self.expr(node.value))

    def expr_BinaryOp(self, node: E.BinaryOp) -> str:
        if node.dtype.is_bfloat16:
            reject_bfloat16_arithmetic(node.dtype)
        if node.dtype.is_vector:
            return self._vector_binary(node)
        a, b = self.expr(node.a), self.expr(node.b)
        if is_checked_division(node):
            self.checked_divisions += 1
            helper = f"tessel_checked_{_DIVISIONS[type(node)]}_{type_suffix(node.dtype)}"
            return f"{helper}({a}, {b}, &{STATUS})"
        if type(node) in _HELPER_OPS:
            return f"tessel_{_HELPER_OPS[type(node)]}_{type_suffix(node.dtype)}({a}, {b})"
        if isinstance(node, E.Mod) and node.dtype.is_float:
            return self._math_call("fmod", node.dtype, (a, b))
        return _wrap_narrow(f"({a} {_INFIX[type(node)]} {b})", node.dtype)

    def expr_CmpOp(self, node: E.CmpOp) -> str:
        if node.a.dtype.is_bfloat16:
            reject_bfloat16_arithmetic(node.a.dtype)
        text = f"({self.expr(node.a)} {node.symbol} {self.expr(node.b)})"
        if node.dtype.is_vector:  # GCC gives 0/-1 lanes of the operands' width: make a mask
            return f"(-__builtin_convertvector({text}, {c_type(node.dtype)}))"
        return text

    def expr_And(self, node: E.And) -> str:
        symbol = "&" if node.dtype.is_vector else "&&"
        return f"({self.expr(node.a)} {symbol} {self.expr(node.b)})"

    def expr_Or(self, node: E.Or) -> str:
        symbol = "|" if node.dtype.is_vector else "||"
        return f"({self.expr(node.a)} {symbol} {self.expr(node.b)})"

    def expr_Not(self, node: E.Not) -> str:
        if node.dtype.is_vector:
            return f"({self.expr(node.a)} ^ 1)"
        return f"(!{self.expr(node.a)})"

    def expr_Select(self, node: E.Select) -> str:
        if node.condition.dtype.is_vector:
            if blendable(node.dtype):
                return self.vector_blend(node)
            return self.per_lane(node, (node.condition, node.true_value, node.false_value))
        c_type(node.dtype)
        condition = self.expr(node.condition)
        return f"({condition} ? {self.expr(node.true_value)} : {self.expr(node.false_value)})"

    # ------------------------------------------------------------------ vectors
    def vector_of(self, dtype: DataType, items: list[str]) -> str:
        """A vector literal of `dtype` with one C expression a lane."""
        return f"(({c_type(dtype)}){{{', '.join(items)}}})"

    def expr_Ramp(self, node: E.Ramp) -> str:
        if node.dtype.is_bfloat16:
            reject_bfloat16_arithmetic(node.dtype)
        element, lanes = node.dtype.element, node.lanes
        base = self.expr(node.base)
        if isinstance(node.stride, E.IntImm):
            steps = [int_literal(k * node.stride.value, element) for k in range(lanes)]
            steps_text = self.vector_of(node.dtype, steps)
            return f"({self.broadcast_text(node.dtype, base)} + {steps_text})"
        iota = self.vector_of(node.dtype, [int_literal(k, element) for k in range(lanes)])
        stride = self.broadcast_text(node.dtype, self.expr(node.stride))
        return f"({self.broadcast_text(node.dtype, base)} + {iota} * {stride})"

    def expr_Broadcast(self, node: E.Broadcast) -> str:
        return self.broadcast_text(node.dtype, self.expr(node.value))

    def broadcast_text(self, dtype: DataType, value: str) -> str:
        """`value` (C of the element type, evaluated once) in every lane of `dtype`."""
        if dtype.is_bool:
            value = f"(int8_t)({value})"
        element = "int8_t" if dtype.is_bool else c_type(dtype.element)
        if _SIMPLE.fullmatch(value):  # a name or a literal: repeat it
            return self.vector_of(dtype, [value] * dtype.lanes)
        items = ["tessel_b"] * dtype.lanes
        return f"({{ {element} tessel_b = {value}; {self.vector_of(dtype, items)}; }})"

    def _vector_binary(self, node: E.BinaryOp) -> str:
        native = type(node) in (E.Add, E.Sub, E.Mul) or (
            type(node) is E.Div and node.dtype.is_float
        )
        if type(node) in (E.Div, E.Mod) and node.dtype.is_integer:
            native = not is_checked_division(node)
        if type(node) in (E.Min, E.Max) and node.dtype.is_float:
            return self.vector_float_min_max(node)
        floor_division = type(node) in (E.FloorDiv, E.FloorMod) and node.dtype.is_integer
        if floor_division and _positive_constant_divisor(node):
            return self._vector_floor_division(node)
        if not native:
            return self.per_lane(node, (node.a, node.b))
        return f"({self.expr(node.a)} {_INFIX[type(node)]} {self.expr(node.b)})"

    def _vector_floor_division(self, node: E.BinaryOp) -> str:
        """Floor division or modulo of an integer vector by a positive constant, as C's
        truncating `/` and `%` on the whole vector (which gcc strength-reduces, and folds for
        constant lanes such as a ramp's `ramp % 2`), corrected where the remainder is negative:
        one lane-wise computation, where a lane loop of checked helpers cost 60 cycles an
        element (ShuffleNet's channel shuffle in blocked layout)."""
        a, b = self.expr(node.a), self.expr(node.b)
        if node.dtype.is_uint:  # no negative remainders: floor is truncation
            return f"({a} {'/' if isinstance(node, E.FloorDiv) else '%'} {b})"
        vector = c_type(node.dtype)
        # A comparison's true lanes are -1: (a / d) + (r < 0) is one less there.
        negative = "(tessel_r < (tessel_z))"
        result = f"(tessel_a / tessel_d) + {negative}"
        if isinstance(node, E.FloorMod):
            result = f"tessel_r + ({negative} & tessel_d)"
        return (
            f"({{ {vector} tessel_a = {a}; {vector} tessel_d = {b}; {vector} tessel_z = {{0}}; "
            f"{vector} tessel_r = tessel_a % tessel_d; {result}; }})"
        )

    def per_lane(self, node: PrimExpr, operands: tuple[PrimExpr, ...], finish: str = "") -> str:
        """`node` computed lane by lane: each vector operand is evaluated once into a local
        (`tessel_p0`, ...), then a loop applies the scalar operation (printed as for scalars)
        to each lane of `tessel_r`; `finish` is C run on the result after the loop."""
        decls, scalars = [], []
        for k, operand in enumerate(operands):
            if not operand.dtype.is_vector:
                scalars.append(operand)
                continue
            name = f"tessel_p{k}"
            decls.append(f"{c_type(operand.dtype)} {name} = {self.expr(operand)};")
            var = E.Var(name, operand.dtype.element)
            self.names.element_of(var, f"{name}[tessel_l]")
            scalars.append(var)
        scalar = _scalar_version(node, tuple(scalars))
        lane = self.expr(scalar)
        vector = c_type(node.dtype)
        # A math call's lane loop is a simd loop: gcc then calls libmvec's vector version (the
        # prelude declares them) instead of unrolling the loop into one scalar call per lane.
        simd = '_Pragma("omp simd") ' if isinstance(node, E.Call) else ""
        return (
            f"({{ {' '.join(decls)} {vector} tessel_r; {simd}"
            f"for (int32_t tessel_l = 0; tessel_l < {node.dtype.lanes}; ++tessel_l) "
            f"tessel_r[tessel_l] = {lane}; {finish}tessel_r; }})"
        )

    def _vector_load(self, node: BufferLoad) -> str:
        vector, lanes = c_type(node.dtype), node.dtype.lanes
        pointer, indices = self.vector_access(node.buffer, node.indices, lanes)
        if indices is None and node.predicate is not None:
            return self._masked_copy_load(
                vector, lanes, pointer, node.predicate, node.dtype.element.itemsize
            )
        if indices is None:
            copy = f"__builtin_memcpy(&tessel_v, {pointer}, sizeof(tessel_v));"
            return f"({{ {vector} tessel_v; {copy} tessel_v; }})"
        index_type = c_type(node.indices[-1].dtype.with_lanes(lanes))  # the chunk's index
        lines = [f"{vector} tessel_v = {{0}};", f"{index_type} tessel_i = {indices};"]
        test = ""
        if node.predicate is not None:
            lines.append(f"{c_type(node.predicate.dtype)} tessel_m = {self.expr(node.predicate)};")
            test = "if (tessel_m[tessel_l]) "
        lines.append(
            f"for (int32_t tessel_l = 0; tessel_l < {lanes}; ++tessel_l) "
            f"{test}tessel_v[tessel_l] = {pointer}[tessel_i[tessel_l]];"
        )
        return f"({{ {' '.join(lines)} tessel_v; }})"

    def _masked_copy_load(
        self, vector: str, lanes: int, pointer: str, predicate: PrimExpr, element_bytes: int
    ) -> str:
        """A contiguous masked load: one copy when no lane is disabled (every chunk of a
        vectorized loop but the last), else lane by lane, disabled lanes reading 0 and never
        touching memory (one masked instruction for 8 or 16 lanes of 4 bytes, c_prelude.py)."""
        mask = f"{c_type(predicate.dtype)} tessel_m = {self.expr(predicate)};"
        copy = f"__builtin_memcpy(&tessel_v, {pointer}, sizeof(tessel_v));"
        if masked_copy_helper(predicate.dtype.lanes, element_bytes):
            per_lane = f"tessel_masked_load4x{lanes}(&tessel_v, {pointer}, &tessel_m);"
        else:
            per_lane = (
                f"tessel_v = ({vector}){{0}}; "
                f"for (int32_t tessel_l = 0; tessel_l < {lanes}; ++tessel_l) "
                f"if (tessel_m[tessel_l]) tessel_v[tessel_l] = {pointer}[tessel_l];"
            )
        last_lane = self.last_lane_test(predicate)
        if last_lane is None:  # test the mask itself
            every = all_lanes_test("tessel_m", lanes)
            body = f"{mask} if ({every}) {copy} else {{ {per_lane} }}"
        else:  # the mask is computed only when some lane is disabled
            body = f"if ({last_lane}) {copy} else {{ {mask} {per_lane} }}"
        return f"({{ {vector} tessel_v; {body} tessel_v; }})"

    def expr_Let(self, node: E.Let) -> str:
        # A GCC/Clang statement expression: C has no let expression.
        value = self.expr(node.value)
        name = self.names.bind(node.var)
        # What the body prints may name this binding: none of it is reused outside the body.
        outer, self._printed = self._printed, {}
        try:
            body = self.expr(node.body)
        finally:
            self._printed = outer
        return f"({{ {c_type(node.var.dtype)} {name} = {value}; {body}; }})"

    def expr_BufferLoad(self, node: BufferLoad) -> str:
        if node.predicate is not None or any(i.dtype.is_vector for i in node.indices):
            return self._vector_load(node)
        pointer, index = self.access_parts(node.buffer, node.indices)
        return f"{pointer}[{self.expr(index)}]"

    def expr_Call(self, node: E.Call) -> str:
        if not isinstance(node.op, E.Op):
            raise CodegenError(
                f"calls of module functions (`{node.op.name_hint}`) are not supported yet",
                rule="codegen.call-global",
            )
        if node.op.name.startswith("tessel."):  # lowering's explicit forms (c_tessel_ops.py)
            return self.print_tessel_call(node)
        short = node.op.name.removeprefix("tir.")
        if short not in c_bfloat16.MOVING_CALLS and any(
            x.dtype.is_bfloat16 for x in (node, *node.args)
        ):
            reject_bfloat16_arithmetic(DataType("bfloat", 16))
        if node.dtype.is_vector and short in (*builtin.MATH_UNARY, *builtin.MATH_BINARY):
            return self.per_lane(node, node.args)
        if short == "reinterpret":  # scalar or vector alike: the bits move as a whole
            return reinterpret_text(
                self.names, node.args[0].dtype, node.dtype, self.expr(node.args[0])
            )
        if short == "if_then_else" and not node.args[0].dtype.is_vector:
            c_type(node.dtype)  # vector branches under one condition: a C conditional
            return self._if_then_else(node)
        if any(a.dtype.is_vector for a in node.args) or node.dtype.is_vector:
            reject_vector(f"a vector call of `{node.op.name}`")
        printer = _CALL_PRINTERS.get(short)
        if printer is not None:
            return printer(self, node)
        if short in builtin.MATH_UNARY or short in builtin.MATH_BINARY:
            return self._math(short, node)
        raise CodegenError(f"the C backend does not support `{node.op.name}`", rule="codegen.op")

    def _math(self, name: str, node: E.Call) -> str:
        args = tuple(self.expr(a) for a in node.args)
        if name in _PRELUDE_MATH:
            return f"tessel_{name}_{type_suffix(node.dtype)}({', '.join(args)})"
        return self._math_call(_LIBM_NAMES.get(name, name), node.dtype, args)

    def _math_call(self, name: str, dtype: DataType, args: tuple[str, ...]) -> str:
        c_type(dtype)
        suffix = "f" if dtype.bits == 32 else ""
        return f"{name}{suffix}({', '.join(args)})"

    def _if_then_else(self, node: E.Call) -> str:
        condition, true_value, false_value = (self.expr(a) for a in node.args)
        return f"({condition} ? {true_value} : {false_value})"

    def _float_test(self, node: E.Call) -> str:
        return f"((bool){node.op.name.removeprefix('tir.')}({self.expr(node.args[0])}))"

    def _bitwise(self, node: E.Call) -> str:
        symbol = _BITWISE[node.op.name.removeprefix("tir.")]
        a, b = (self.expr(x) for x in node.args)
        return f"(({c_type(node.dtype)})({a} {symbol} {b}))"

    def _bitwise_not(self, node: E.Call) -> str:
        return f"(({c_type(node.dtype)})(~{self.expr(node.args[0])}))"

    def _likely(self, node: E.Call) -> str:
        return f"__builtin_expect(!!{self.expr(node.args[0])}, 1)"

    def _call_extern(self, node: E.Call) -> str:
        callee = node.args[0] if node.args else None
        name: object = callee.value if isinstance(callee, E.StringImm) else callee
        if not is_c_identifier(name):
            raise CodegenError(
                f"call_extern needs the name of a C function, got {name!r}",
                rule="codegen.call-extern",
                hint="a C identifier: ASCII letters, digits and `_`, not starting with a digit, "
                "and not a C keyword",
            )
        args = ", ".join(self.expr(a) for a in node.args[1:])
        return f"{name}({args})"

    def _address_of(self, node: E.Call) -> str:
        return f"((void*)&{self.expr(node.args[0])})"

    def _access_ptr(self, node: E.Call) -> str:
        element = c_type(node.args[0].dtype)
        data, offset = self.expr(node.args[1]), self.expr(node.args[2])
        return f"((void*)(({element}*){data} + {offset}))"

    def _call_packed(self, node: E.Call) -> str:
        name = getattr(node.args[0], "value", "?") if node.args else "?"
        raise CodegenError(
            f'T.call_packed("{name}", ...) needs TVM\'s packed-function runtime, which the C '
            "backend does not have",
            rule="codegen.call-packed",
            hint="call a C function with T.call_extern instead",
        )

    def _ret(self, node: E.Call) -> str:
        # A statement T.ret is printed by StmtPrinter; this one is inside an expression.
        raise CodegenError(
            "T.ret inside an expression: the C backend returns from a statement `T.ret(v)` only",
            rule="codegen.ret",
            hint="compute the value first, then T.ret(value) as a statement of its own",
        )

    def _undef(self, node: E.Call) -> str:
        raise CodegenError(
            "T.undef() reached code generation: its value would be read at run time",
            rule="codegen.undef",
            hint="T.undef() may only be stored (and such stores are removed)",
        )


def _scalar_version(node: PrimExpr, operands: tuple[PrimExpr, ...]) -> PrimExpr:
    """The one-lane version of the vector `node` over scalar `operands`."""
    if isinstance(node, E.BinaryOp | E.CmpOp):
        return type(node)(*operands)
    if isinstance(node, E.Select):
        return E.Select(*operands)
    if isinstance(node, E.Cast):
        return E.Cast(node.dtype.element, operands[0])
    if isinstance(node, E.Call):
        return E.Call(node.dtype.element, node.op, operands)
    raise CodegenError(f"no per-lane form of `{type(node).__name__}`", rule="codegen.vector")


def _wrap_narrow(text: str, dtype: DataType) -> str:
    """Cast an int8/int16 (or uint8/uint16) result back: C computes it in `int`."""
    c_type(dtype)
    if dtype.is_vector:  # GCC vector arithmetic is done in the element type
        return text
    if (dtype.is_integer and dtype.bits < 32) or dtype.is_bool:
        return f"(({c_type(dtype)}){text})"
    return text


_CALL_PRINTERS: dict[str, Callable[[ExprPrinter, E.Call], str]] = {
    "if_then_else": ExprPrinter._if_then_else,
    "isnan": ExprPrinter._float_test,
    "isinf": ExprPrinter._float_test,
    "isfinite": ExprPrinter._float_test,
    "bitwise_and": ExprPrinter._bitwise,
    "bitwise_or": ExprPrinter._bitwise,
    "bitwise_xor": ExprPrinter._bitwise,
    "shift_left": ExprPrinter._bitwise,
    "shift_right": ExprPrinter._bitwise,
    "bitwise_not": ExprPrinter._bitwise_not,
    "likely": ExprPrinter._likely,
    "call_extern": ExprPrinter._call_extern,
    "call_pure_extern": ExprPrinter._call_extern,
    "tvm_call_packed": ExprPrinter._call_packed,
    "address_of": ExprPrinter._address_of,
    "tvm_access_ptr": ExprPrinter._access_ptr,
    "ret": ExprPrinter._ret,
    "undef": ExprPrinter._undef,
}
