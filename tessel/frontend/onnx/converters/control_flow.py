"""Control flow where shapes are static: If, Loop, Scan.

A subgraph (a branch, a loop or scan body) is imported like the main graph, node by node with the
same converters, reading the names of the enclosing graphs (subgraph.py). Tessel's graphs have no
control flow, so each form is resolved at import: If takes its branch when the condition is known,
else computes both and selects with `where`; Loop is unrolled when its trip count and condition
are known; Scan is unrolled over its (static) sequence length.
"""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.converters.sequence import SequenceValue, stack
from tessel.frontend.onnx.converters.subgraph import Body, outer_scope
from tessel.frontend.onnx.node import OnnxNode, graph_inputs_of
from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET, Entry, every_opset
from tessel.frontend.onnx.relay import call, const
from tessel.frontend.onnx.values import Value, constant_value, dtype_of_elem_type
from tessel.graph.ty import TensorType
from tessel.graph.type_util import type_equal

# Loops unroll at import: more iterations than this are refused rather than built.
MAX_UNROLLED_ITERATIONS = 4096


def _same(a: Value, b: Value) -> bool:
    """True if two branch results are the same constant."""
    return (
        a.is_constant
        and b.is_constant
        and a.data.dtype == b.data.dtype
        and a.data.shape == b.data.shape
        and bool(np.array_equal(a.data, b.data))
    )


def _mergeable(then: Value, other: Value) -> bool:
    """True if `where` can select between two branch results: tensors of one static type."""
    if isinstance(then, SequenceValue) or isinstance(other, SequenceValue):
        return False
    return type_equal(then.type, other.type)


def _select(node: OnnxNode, then: Value, other: Value) -> Value:
    """An output of an If whose condition is computed in the graph: where(cond, then, else)."""
    if _same(then, other):
        return then
    condition = node.expr(0)
    if node.shape(0) != ():
        condition = call("reshape", condition, newshape=())
    return Value(call("where", condition, then.expr, other.expr), then.type)


def _gives_non_tensors(node: OnnxNode) -> bool:
    """True if a branch declares a sequence or optional output (no `where` selects those)."""
    branches = (node.attr("then_branch"), node.attr("else_branch"))
    return any(
        out.type.WhichOneof("value") not in (None, "tensor_type")
        for graph in branches
        for out in graph.output
    )


def _run_steps(
    node: OnnxNode, body: Body, states: list[Value], cuts: list[list[Value]]
) -> tuple[list[Value], list[list[Value]]]:
    """A scan body run over the slices `cuts` (one list per scan input): the final states and
    each step's scan outputs."""
    steps = []
    for step in zip(*cuts, strict=True):
        results = body.run_positional([*states, *step])
        states = results[: len(states)]
        steps.append(results[len(states) :])
    if not steps:
        raise node.error("its sequence length is 0")
    return states, steps


def convert_if(node: OnnxNode) -> list[Value]:
    """If: the chosen branch when the condition is known at import, else both branches and a
    `where` per output; branches that differ in type (or give sequences) need the condition
    at import (`node.static` names the graph inputs it depends on)."""
    scope = outer_scope(node)
    then_graph, else_graph = node.attr("then_branch"), node.attr("else_branch")
    # A condition computed from constants alone folds (node.static): only one that depends on
    # graph inputs needs both branches.
    if graph_inputs_of(node.expr(0)) and not _gives_non_tensors(node):
        then = Body(then_graph, node, scope).run({})
        other = Body(else_graph, node, scope).run({})
        if len(then) == len(other) and all(map(_mergeable, then, other)):
            return [_select(node, a, b) for a, b in zip(then, other, strict=True)]
    condition = node.static(0, "condition (its branches differ in type)")
    if condition.size != 1:
        raise node.error(f"the condition must hold one value, got shape {list(condition.shape)}")
    chosen = then_graph if bool(condition.reshape(-1)[0]) else else_graph
    return Body(chosen, node, scope).run({})


def _known_flag(node: OnnxNode, value: Value, what: str) -> bool:
    """A loop's condition, which must be known at import."""
    if not value.is_constant:
        raise node.error(
            f"its {what} is computed in the graph; Tessel unrolls loops at import "
            "and needs it known"
        )
    return bool(value.data.reshape(-1)[0])


def _trip_count(node: OnnxNode) -> int | None:
    """The loop's trip count M (None when omitted: the condition alone ends the loop)."""
    if not node.has_input(0):
        return None
    count = int(node.static(0, "trip count M").reshape(-1)[0])
    return max(count, 0)


def _empty_scan_outputs(node: OnnxNode, first: int) -> list[Value]:
    """The scan outputs of a loop that ran no iteration: [0, ...] tensors of ONNX's types."""
    outputs = []
    for position in range(first, len(node.proto.output)):
        ty = node.output_types[position]
        if ty is None:
            raise node.error("it runs no iteration and the shapes of its scan outputs are unknown")
        outputs.append(constant_value(np.zeros(ty.shape, ty.dtype)))
    return outputs


def convert_loop(node: OnnxNode) -> list[Value]:
    """Loop, unrolled at import: the trip count and the condition (initial and each iteration's)
    must be known; scan outputs are the iterations' values stacked on a new axis 0."""
    body = Body(node.attr("body"), node, outer_scope(node))
    limit = _trip_count(node)
    running = True
    if node.has_input(1):  # static: the backend binds a condition fed as a graph input
        running = bool(node.static(1, "condition").reshape(-1)[0])
    carried = [node.input(i) for i in range(2, len(node.inputs))]
    scanned: list[list[Value]] = []
    iteration = 0
    while running and (limit is None or iteration < limit):
        if iteration >= MAX_UNROLLED_ITERATIONS:
            raise node.error(
                f"it runs more than {MAX_UNROLLED_ITERATIONS} iterations, which Tessel would unroll"
            )
        counter = constant_value(np.array(iteration, np.int64))
        flag = constant_value(np.array(running))
        results = body.run_positional([counter, flag, *carried])
        running = _known_flag(node, results[0], "condition after an iteration")
        carried = results[1 : 1 + len(carried)]
        scanned.append(results[1 + len(carried) :])
        iteration += 1
    if not scanned:
        return [*carried, *_empty_scan_outputs(node, len(carried))]
    columns = zip(*scanned, strict=True)
    return [*carried, *(stack(node, list(values), 0) for values in columns)]


def _scan_slices(value: Value, axis: int, reverse: bool) -> list[Value]:
    """`value` cut along `axis` into its elements (last first when `reverse`)."""
    extent = value.type.shape[axis]
    order = range(extent - 1, -1, -1) if reverse else range(extent)
    shape = value.type.shape[:axis] + value.type.shape[axis + 1 :]
    if value.is_constant:
        return [constant_value(np.take(value.data, t, axis=axis)) for t in order]
    return [
        Value(
            call("take", value.expr, const(np.int64(t)), axis=axis, mode="fast"),
            TensorType(shape, value.type.dtype),
        )
        for t in order
    ]


def _scan(node: OnnxNode, body: Body, states: list[Value], inputs: list[Value]) -> list[Value]:
    """One scan (opset 9's form, no batch axis): the final states, then the scan outputs."""
    count = int(node.attr("num_scan_inputs"))
    axes = list(node.attr("scan_input_axes", [0] * count))
    directions = list(node.attr("scan_input_directions", [0] * count))
    axes = [node.axis(int(a), len(v.type.shape)) for a, v in zip(axes, inputs, strict=True)]
    cuts = [_scan_slices(v, a, bool(d)) for v, a, d in zip(inputs, axes, directions, strict=True)]
    lengths = {len(c) for c in cuts}
    if len(lengths) != 1:
        raise node.error(f"its scan inputs have different lengths {sorted(lengths)}")
    states, steps = _run_steps(node, body, states, cuts)
    return [*states, *_scan_outputs(node, steps)]


def _scan_outputs(node: OnnxNode, steps: list[list[Value]]) -> list[Value]:
    """Each scan output: its per-step values stacked on its axis, in its direction."""
    count = len(steps[0])
    axes = list(node.attr("scan_output_axes", [0] * count))
    directions = list(node.attr("scan_output_directions", [0] * count))
    outputs = []
    for k in range(count):
        values = [step[k] for step in steps]
        if directions[k]:
            values.reverse()
        axis = node.axis(int(axes[k]), len(values[0].type.shape) + 1)
        outputs.append(stack(node, values, axis))
    return outputs


def convert_scan(node: OnnxNode) -> list[Value]:
    """Scan (opset 9+), unrolled over the sequence length."""
    body = Body(node.attr("body"), node, outer_scope(node))
    count = int(node.attr("num_scan_inputs"))
    given = list(node.inputs)
    states, inputs = given[: len(given) - count], given[len(given) - count :]
    return _scan(node, body, states, inputs)


def convert_scan_batched(node: OnnxNode) -> list[Value]:
    """Scan at opset 8: every input has a batch axis 0 (the scan axis is 1), and an optional
    sequence_lens first input, which must be omitted (every sequence full length)."""
    if node.has_input(0):
        raise node.error("sequence_lens is not supported; every sequence must be full length")
    body = Body(node.attr("body"), node, outer_scope(node))
    count = int(node.attr("num_scan_inputs"))
    given = list(node.inputs[1:])
    states, inputs = given[: len(given) - count], given[len(given) - count :]
    directions = list(node.attr("directions", [0] * count))
    batch = given[0].type.shape[0]
    per_batch = []
    for b in range(batch):
        row_states = [_scan_slices(v, 0, False)[b] for v in states]
        row_inputs = [_scan_slices(v, 0, False)[b] for v in inputs]
        per_batch.append(_scan_row(node, body, row_states, row_inputs, directions))
    return [stack(node, [row[k] for row in per_batch], 0) for k in range(len(per_batch[0]))]


def _scan_row(
    node: OnnxNode, body: Body, states: list[Value], inputs: list[Value], directions: list[int]
) -> list[Value]:
    """One batch entry of an opset-8 Scan: scan axis 0, outputs stacked on axis 0."""
    cuts = [_scan_slices(v, 0, bool(d)) for v, d in zip(inputs, directions, strict=True)]
    states, steps = _run_steps(node, body, states, cuts)
    outputs = [stack(node, [step[k] for step in steps], 0) for k in range(len(steps[0]))]
    return [*states, *outputs]


def _map_inputs(node: OnnxNode) -> tuple[int, list[Value | SequenceValue]]:
    """The number of SequenceMap's iterations and its inputs (sequences of that length, or
    tensors every iteration reads whole)."""
    inputs = [node.input(i) for i in range(len(node.inputs))]
    if not isinstance(inputs[0], SequenceValue):
        raise node.error("its first input must be a sequence known at import")
    count = len(inputs[0].items)
    lengths = {len(v.items) for v in inputs if isinstance(v, SequenceValue)}
    if lengths != {count}:
        raise node.error(f"its sequences have different lengths {sorted(lengths)}")
    return count, inputs


def convert_sequence_map(node: OnnxNode) -> list[SequenceValue]:
    """SequenceMap: the body applied to the i-th tensor of each input sequence (and the whole
    of each tensor input), unrolled; each output is the sequence of its values."""
    body = Body(node.attr("body"), node, outer_scope(node))
    count, inputs = _map_inputs(node)
    runs = []
    for i in range(count):
        args = [v.items[i] if isinstance(v, SequenceValue) else v for v in inputs]
        runs.append(body.run_positional(args))
    outputs = []
    for k, out in enumerate(node.attr("body").output):
        values = [run[k] for run in runs]
        elem_type = out.type.sequence_type.elem_type.tensor_type.elem_type
        dtype = values[0].type.dtype if values else _dtype(node, elem_type)
        outputs.append(SequenceValue.of(values, dtype))
    return outputs


def _dtype(node: OnnxNode, elem_type: int) -> str:
    """The dtype of an ONNX element type (float32 when unset), for an empty sequence."""
    return dtype_of_elem_type(elem_type or 1, f"{node.op_type} `{node.name}`")


TABLE: dict[str, tuple[Entry, ...]] = {
    "SequenceMap": every_opset(convert_sequence_map),
    "If": every_opset(convert_if),
    "Loop": every_opset(convert_loop),
    "Scan": ((FIRST_OPSET, 8, convert_scan_batched), (9, LAST_OPSET, convert_scan)),
}
