"""The C of the `tessel.`-prefixed builtins, the explicit forms that lowering passes give their
decisions about C (tessel/tir/builtin.py); the printer only prints them.

- `tessel.exp_flush_below(x, floor)` (ClampVectorExp): a vector exp's argument clamped from
  below by a vector max with the prelude's floor, then a simd lane loop of exp (libmvec), then
  the lanes the clamp reached set to 0 (a NaN argument stays NaN: the max keeps it, and
  NaN == floor is false). The floor is a variable of the prelude, not a constant: gcc would
  fold exp of a constant bound and call exp on the unclamped argument. The max is a vector
  operation before the lane loop: a compare inside the simd loop needs gcc's loop
  if-conversion, which the build turns off (tessel.runtime.compiler), and exp then ran one lane
  at a time.
- `tessel.deinterleaved_load(load)` (DeinterleaveLoads): the span of the even elements read as
  two vectors, each by a masked load of its even lanes only (those of a disabled result lane
  off too), then one shuffle keeps the even lanes.
"""

from __future__ import annotations

from typing import Any

from tessel.codegen.c_access import masked_copy_helper
from tessel.codegen.c_types import c_type, float_literal, type_suffix
from tessel.codegen.errors import CodegenError
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.expr import PrimExpr
from tessel.support.dtype import DataType
from tessel.tir import builtin
from tessel.tir.buffer import BufferLoad


class TesselOps:
    """The ExprPrinter's printing of `tessel.*` calls; `exp_floors` collects the prelude
    floor variables printed, which the vector max (c_select.py) knows are numbers."""

    names: Any
    exp_floors: list[E.Var]

    def expr(self, node: PrimExpr) -> str:  # provided by ExprPrinter
        raise NotImplementedError

    def per_lane(self, node: PrimExpr, operands: tuple[PrimExpr, ...], finish: str = "") -> str:
        raise NotImplementedError  # provided by ExprPrinter

    def access_parts(self, buffer: Any, indices: Any) -> tuple[str, PrimExpr]:
        raise NotImplementedError  # provided by BufferAccess

    def print_tessel_call(self, node: E.Call) -> str:
        """The C of a call of a `tessel.*` builtin."""
        if node.op is builtin.exp_flush_below_op:
            return self._exp_flush_below(node)
        if node.op is builtin.deinterleaved_load_op:
            return self._deinterleaved_load(node)
        raise CodegenError(f"the C backend does not support `{node.op.name}`", rule="codegen.op")

    def _exp_flush_below(self, node: E.Call) -> str:
        x, floor = node.args
        floor_name = self._floor_variable(x.dtype.element, floor)
        exp = builtin.MATH_UNARY["exp"]
        if not node.dtype.is_vector:
            zero, dtype = float_literal(0.0, node.dtype), c_type(node.dtype)
            call = f"exp{'f' if node.dtype.bits == 32 else ''}(tessel_x)"
            test = f"tessel_x <= {floor_name} ? {zero} : {call}"
            return f"({{ {dtype} tessel_x = {self.expr(x)}; {test}; }})"
        bound = E.Var("tessel_exp_floor", x.dtype.element)
        self.names.element_of(bound, floor_name)
        self.exp_floors.append(bound)
        clamped = E.Max(x, E.Broadcast(bound, x.dtype.lanes))
        # The clamped lanes made 0: exp of anything below the bound is 0 to float precision,
        # and left at e**-87 they became subnormal once softmax divided them by its sum.
        mask = c_type(DataType("int", node.dtype.bits, node.dtype.lanes))
        finish = (
            f"tessel_r = ({c_type(node.dtype)})(({mask})tessel_r & "
            f"~({mask})(tessel_p0 == {floor_name})); "
        )
        return self.per_lane(E.Call(node.dtype, exp, (clamped,)), (clamped,), finish)

    def _floor_variable(self, dtype: DataType, floor: PrimExpr) -> str:
        """The prelude variable holding `floor` (c_prelude.py declares one per float width)."""
        expected = builtin.EXP_FLOORS.get(dtype.bits) if dtype.is_float else None
        if not isinstance(floor, E.FloatImm) or expected is None or floor.value != expected:
            raise CodegenError(
                f"tessel.exp_flush_below of {dtype} at `{floor}`: the C prelude has a floor only "
                f"for float32 ({builtin.EXP_FLOORS[32]}) and float64 ({builtin.EXP_FLOORS[64]})",
                rule="codegen.exp-floor",
                hint="let ClampVectorExp write the call (tessel.transform.lower runs it)",
            )
        return f"tessel_exp_floor_{type_suffix(dtype)}"

    def _deinterleaved_load(self, node: E.Call) -> str:
        (load,) = node.args
        ramp = load.indices[-1] if isinstance(load, BufferLoad) and load.indices else None
        lanes, element = node.dtype.lanes, node.dtype.element
        if not (
            isinstance(ramp, E.Ramp)
            and builders.is_const_int(ramp.stride, 2)
            and masked_copy_helper(lanes, element.itemsize)
        ):
            raise CodegenError(
                f"tessel.deinterleaved_load needs a load of 8 or 16 four-byte lanes at index "
                f"Ramp(base, 2, lanes), got `{load}`",
                rule="codegen.deinterleaved-load",
                hint="let DeinterleaveLoads write the call (tessel.transform.lower runs it)",
            )
        assert isinstance(load, BufferLoad)
        vector = c_type(node.dtype)
        pointer, _ = self.access_parts(load.buffer, load.indices)
        mask_type = c_type(DataType.of("bool").with_lanes(lanes))
        even = ", ".join("1" if j % 2 == 0 else "0" for j in range(lanes))
        masks = [f"{mask_type} tessel_even = ({mask_type}){{{even}}};"]
        if load.predicate is None:
            masks.append(f"{mask_type} tessel_lo = tessel_even, tessel_hi = tessel_even;")
        else:
            # Result lane i reads even element 2i: lane 2i of the first half or of the second.
            spread = [
                ", ".join(str(start + j // 2) for j in range(lanes)) for start in (0, lanes // 2)
            ]
            masks += [
                f"{c_type(load.predicate.dtype)} tessel_p = {self.expr(load.predicate)};",
                f"{mask_type} tessel_lo = __builtin_shufflevector(tessel_p, tessel_p, {spread[0]})"
                " & tessel_even;",
                f"{mask_type} tessel_hi = __builtin_shufflevector(tessel_p, tessel_p, {spread[1]})"
                " & tessel_even;",
            ]
        start = f"({pointer} + {self.expr(ramp.base)})"
        evens = ", ".join(str(2 * j) for j in range(lanes))
        loads = (
            f"{vector} tessel_a, tessel_b; "
            f"tessel_masked_load4x{lanes}(&tessel_a, {start}, &tessel_lo); "
            f"tessel_masked_load4x{lanes}(&tessel_b, {start} + {lanes}, &tessel_hi);"
        )
        shuffle = f"__builtin_shufflevector(tessel_a, tessel_b, {evens})"
        return f"({{ {' '.join(masks)} {loads} {shuffle}; }})"
