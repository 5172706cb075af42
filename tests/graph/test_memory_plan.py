"""MemoryPlan: intermediates share one arena by liveness (best-fit, 64-byte aligned); constants
are counted apart; no two tensors live at once overlap (a hypothesis property, on the offset
assignment and on random lowered graphs)."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.graph import parse
from tessel.graph.call_lowered import is_call_lowered, is_reshape_only
from tessel.graph.memory_plan import (
    ALIGNMENT,
    HOST,
    DeviceCopy,
    Request,
    TensorSlot,
    assign_offsets,
    live_bytes,
    plan_memory,
)
from tessel.graph.passes.host_interface import PlaceForExecution
from tessel.graph.passes.lower_te import LowerTE
from tessel.graph.passes.to_graph_normal_form import ToGraphNormalForm
from tessel.graph.traversal import post_order_exprs
from tessel.ir import VirtualDevice

KB4 = 4096  # a (1, 1024) float32 tensor


def plan(text: str):
    return plan_memory(LowerTE(schedule=False)(parse(text)))


def arena(p) -> list[TensorSlot]:
    return [t for t in p.tensors if t.kind == "intermediate"]


def overlaps(a: TensorSlot, b: TensorSlot) -> bool:
    if _storage(a) == _storage(b):
        return False  # a reshape and its source: the same bytes on purpose
    live_together = a.start <= b.end and b.start <= a.end
    return live_together and a.offset < b.offset + b.nbytes and b.offset < a.offset + a.nbytes


def test_a_chain_reuses_memory():
    p = plan("""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 1024), float32]) {
  %0 = nn.relu(%x);
  %1 = exp(%0);
  %2 = negative(%1);
  %3 = nn.relu(%2);
  %4 = exp(%3);
  negative(%4)
}
""")
    assert len(arena(p)) == 5
    assert p.peak_bytes == 2 * KB4  # each kernel needs its input and its output, no more
    assert {t.offset for t in arena(p)} == {0, KB4}
    assert p.tensors[p.outputs[0]].kind == "output"  # the result is the caller's memory


def test_a_diamond_keeps_both_branches_live():
    p = plan("""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 1024), float32]) {
  %0 = nn.relu(%x);
  %1 = exp(%0);
  %2 = negative(%0);
  %3 = add(%1, %2);
  nn.relu(%3)
}
""")
    a, b, c, d = arena(p)
    assert len({a.offset, b.offset, c.offset}) == 3  # %0 is read by %2 while %1 waits for %3
    assert d.offset in (a.offset, b.offset, c.offset) and d.offset != b.offset != c.offset
    assert p.peak_bytes == 3 * KB4


def test_offsets_are_aligned_and_constants_counted_apart():
    p = plan("""#[version = "0.0.5"]
def @main(%x: Tensor[(3, 5), float32]) {
  %0 = add(%x, 2f);
  %1 = exp(%0);
  %2 = multiply(%1, %0);
  negative(%2)
}
""")
    assert all(t.offset % ALIGNMENT == 0 for t in arena(p))
    assert p.constant_bytes == 4 and p.constants[0].shape == ()
    assert p.peak_bytes == 3 * ALIGNMENT  # 60 bytes round up to 64; %2 reads %0 and %1


def test_unused_tuple_fields_hold_memory_for_their_kernel_only():
    p = plan("""#[version = "0.0.5"]
def @main(%x: Tensor[(2, 6), float32]) {
  %0 = split(%x, indices_or_sections=3, axis=1);
  %1 = nn.relu(%0.0);
  exp(%1)
}
""")
    fields = [t for t in arena(p) if t.start == 0]
    assert len(fields) == 3 and [t.end for t in fields] == [1, 0, 0]
    assert [c.kernel for c in p.calls] == ["fused_split", "fused_nn_relu", "fused_exp"]
    assert p.calls[0].outputs == tuple(t.id for t in fields)


requests = st.lists(
    st.builds(
        lambda n, s, length: Request(n, s, s + length),
        st.integers(1, 5000),
        st.integers(0, 20),
        st.integers(0, 6),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(requests)
def test_no_two_live_blocks_overlap(reqs):
    offsets, peak = assign_offsets(reqs)
    for (i, a), (j, b) in itertools.combinations(enumerate(reqs), 2):
        if a.start <= b.end and b.start <= a.end:
            assert offsets[i] + a.nbytes <= offsets[j] or offsets[j] + b.nbytes <= offsets[i]
    assert all(
        o % ALIGNMENT == 0 and o + r.nbytes <= peak for o, r in zip(offsets, reqs, strict=True)
    )
    steps = {t for r in reqs for t in range(r.start, r.end + 1)}
    live = [sum(r.nbytes for r in reqs if r.start <= t <= r.end) for t in steps]
    assert peak >= max(live, default=0)


def _storage(slot: TensorSlot) -> int:
    return slot.alias_of if slot.alias_of >= 0 else slot.id


UNARY = ["nn.relu", "exp", "negative", "sigmoid", "reshape"]


@st.composite
def dataflow_programs(draw):
    """A random DAG of unary and binary elementwise calls on (n,) tensors of a few sizes."""
    lines, values = [], ["%x"]
    for k in range(draw(st.integers(1, 12))):
        if draw(st.booleans()) and len(values) > 1:
            a, b = draw(st.sampled_from(values)), draw(st.sampled_from(values))
            lines.append(f"  %{k} = add({a}, {b});")
        else:
            op, arg = draw(st.sampled_from(UNARY)), draw(st.sampled_from(values))
            extra = ", newshape=[100]" if op == "reshape" else ""
            lines.append(f"  %{k} = {op}({arg}{extra});")
        values.append(f"%{k}")
    outs = draw(st.lists(st.sampled_from(values[1:]), min_size=1, max_size=3, unique=True))
    lines.append(f"  ({', '.join(outs)})")
    body = "\n".join(lines)
    return f'#[version = "0.0.5"]\ndef @main(%x: Tensor[(100), float32]) {{\n{body}\n}}\n'


@settings(max_examples=40, deadline=None)
@given(dataflow_programs())
def test_planned_graphs_never_overlap_live_tensors(text):
    p = plan(text)
    for a, b in itertools.combinations(arena(p), 2):
        assert not overlaps(a, b), (a, b)
    for call in p.calls:  # a kernel never writes where it reads
        for i, o in itertools.product(call.inputs, call.outputs):
            ti, to = p.tensors[i], p.tensors[o]
            if ti.kind == to.kind == "intermediate":
                assert ti.offset + ti.nbytes <= to.offset or to.offset + to.nbytes <= ti.offset
    for t in arena(p):  # a shared slot lives as long as every reshape of it
        if t.alias_of >= 0:
            root = p.tensors[t.alias_of]
            assert root.alias_of < 0 and root.offset == t.offset
            assert root.start <= t.start and t.end <= root.end


RESHAPES = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 6), float32]) {
  %0 = nn.relu(%x);
  %1 = reshape(%0, newshape=[2, 12]);
  %2 = reshape(%1, newshape=[24]);
  %3 = exp(%2);
  %4 = reshape(%x, newshape=[24]);
  %5 = add(%3, %4);
  (%5, reshape(%5, newshape=[6, 4]))
}
"""


def test_a_reshape_of_an_intermediate_shares_its_bytes_and_is_not_called():
    p = plan(RESHAPES)
    kernels = [c.kernel for c in p.calls]
    # %1 and %2 share %0's bytes; %4 reshapes an input and the last one into a result: kept.
    assert kernels == [
        "fused_nn_relu",
        "fused_exp",
        "fused_reshape_2",
        "fused_add",
        "fused_reshape_3",
    ]
    relu, first, second = (p.tensors[i] for i in range(1, 4))
    assert first.alias_of == second.alias_of == relu.id and relu.alias_of == -1
    assert first.offset == second.offset == relu.offset
    assert relu.end >= second.end  # %0's bytes live until exp has read %2


def test_lowering_marks_only_reshaping_kernels_reshape_only():
    lowered = LowerTE(schedule=False)(parse(RESHAPES))
    marked = {
        c.op.name_hint: is_reshape_only(c)
        for c in post_order_exprs(lowered["main"].body)
        if is_call_lowered(c)
    }
    reshapes = {f"fused_reshape{suffix}": True for suffix in ("", "_1", "_2", "_3")}
    assert marked == {"fused_nn_relu": False, "fused_exp": False, "fused_add": False, **reshapes}


def _most_live(requests) -> int:
    """Brute force: the most aligned bytes live at any one step."""
    steps = {t for r in requests for t in range(r.start, r.end + 1)}
    aligned = [max(ALIGNMENT, -(-r.nbytes // ALIGNMENT) * ALIGNMENT) for r in requests]
    return max(
        (
            sum(a for a, r in zip(aligned, requests, strict=True) if r.start <= t <= r.end)
            for t in steps
        ),
        default=0,
    )


@settings(max_examples=200, deadline=None)
@given(requests)
def test_live_bytes_is_the_most_bytes_live_at_one_step(reqs):
    assert live_bytes(reqs) == _most_live(reqs)
    assert assign_offsets(reqs)[1] >= live_bytes(reqs)


EXT = VirtualDevice("ext_dev", 0)


@st.composite
def programs_on_two_devices(draw):
    """A random dataflow program whose calls are each put on the ext_dev or left free."""
    text = draw(dataflow_programs())
    lines = text.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("  %") and draw(st.booleans()):
            name, call = line.strip().rstrip(";").split(" = ", 1)
            lines[k] = f"  {name} = on_device({call}, virtual_device=meta[VirtualDevice][0]);"
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None)
@given(programs_on_two_devices())
def test_each_arena_peaks_at_its_most_live_bytes_and_steps_stay_on_their_device(text):
    mod = ToGraphNormalForm()(PlaceForExecution()(parse(text, {"VirtualDevice": [EXT]})))
    p = plan_memory(LowerTE(schedule=False, devices=True)(mod))
    for arena in p.arenas:
        slots = [t for t in arena_slots(p) if t.place == arena.place and t.alias_of < 0]
        reqs = [Request(t.nbytes, t.start, t.end) for t in slots]
        assert arena.live_bytes == _most_live(reqs)
        assert arena.nbytes >= arena.live_bytes
        for a, b in itertools.combinations(slots, 2):
            assert not overlaps(a, b), (a, b)
    for step in p.calls:
        if isinstance(step, DeviceCopy):
            assert p.tensors[step.source].place.device == step.src.device
            assert (
                p.tensors[step.target].place == step.dst or p.tensors[step.target].kind == "output"
            )
            continue
        for slot in step.inputs + step.outputs:
            tensor = p.tensors[slot]
            if tensor.kind in ("intermediate", "constant"):
                assert tensor.place.device == step.place.device
            else:  # the caller's memory: the host, whose kernels alone touch it
                assert step.place == HOST
    assert {t.place for t in p.tensors if t.kind in ("input", "output")} <= {HOST}


def arena_slots(p) -> list[TensorSlot]:
    return [t for t in p.tensors if t.kind == "intermediate"]


def test_a_constant_read_by_two_kernels_of_one_device_is_one_slot_counted_once():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 1024), float32]) {
  %0 = add(%x, meta[relay.Constant][0]);
  multiply(%0, meta[relay.Constant][0])
}
"""
    weight = np.ones((1, 1024), "float32")
    p = plan_memory(LowerTE(schedule=False)(parse(text, {"relay.Constant": [weight]})))
    assert [t.kind for t in p.tensors].count("constant") == 1
    assert p.constant_bytes == weight.nbytes == p.constant_bytes_on(HOST)
