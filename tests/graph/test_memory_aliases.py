"""Concatenation without a copy (MemoryPlan, tessel/graph/memory_aliases.py): the inputs of a
concatenate-only kernel are written into their slices of its output and the kernel is not
called, where they can share; where they cannot (an input of main, a constant, the same tensor
twice, a tensor two concatenations want, a non-contiguous slice, main's result) it stays a
kernel. Every case runs compiled (both executors) against the evaluator; random programs check
that no two live tensors overlap."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.graph import compile, evaluate, parse
from tessel.graph.memory_plan import TensorSlot, plan_memory
from tessel.graph.passes.lower_te import LowerTE

HEADER = '#[version = "0.0.5"]\n'
KB = 1024  # a (1, 256) float32 tensor


def _plan(text: str):
    return plan_memory(LowerTE(schedule=False)(parse(HEADER + text)))


def _kernels(p) -> list[str]:
    return [c.kernel for c in p.kernel_calls]


def _runs_like_the_evaluator(text: str, seed: int = 0) -> None:
    mod = parse(HEADER + text)
    rng = np.random.default_rng(seed)
    inputs = [
        rng.standard_normal(p.type_annotation.shape).astype("float32") for p in mod["main"].params
    ]
    want = evaluate(mod, *inputs)
    for executor in ("aot", "python"):
        got = compile(mod, executor=executor)(*inputs)
        for have, expected in zip(_flat(got), _flat(want), strict=True):
            np.testing.assert_allclose(have, expected, rtol=1e-5, err_msg=executor)


def _flat(value) -> list:
    return list(value) if isinstance(value, tuple) else [value]


def _no_live_overlap(p) -> None:
    """Tensors live at once never share bytes, except a tensor and what holds it (a reshape
    and its input, a slice and the concatenation it is in, nested)."""
    tensors = [t for t in p.tensors if t.kind == "intermediate"]
    for a, b in itertools.combinations(tensors, 2):
        if not (a.start <= b.end and b.start <= a.end):
            continue
        disjoint = a.offset + a.nbytes <= b.offset or b.offset + b.nbytes <= a.offset
        if disjoint:
            continue
        assert _root(a) == _root(b) and (_holds(a, b) or _holds(b, a)), (a, b)


def _root(t: TensorSlot) -> int:
    return t.alias_of if t.alias_of >= 0 else t.id


def _holds(outer: TensorSlot, inner: TensorSlot) -> bool:
    """Whether `inner`'s bytes are within `outer`'s (a reshape: the same bytes)."""
    end = outer.offset + outer.nbytes
    return outer.offset <= inner.offset and inner.offset + inner.nbytes <= end


JOIN = """def @main(%x: Tensor[(1, 256), float32]) {
  %0 = nn.relu(%x);
  %1 = exp(%x);
  %2 = concatenate((%0, %1), axis=1);
  negative(%2)
}"""


def test_inputs_of_a_concatenation_are_written_into_their_slices():
    p = _plan(JOIN)
    assert "fused_concatenate" not in _kernels(p)
    relu, exp_, joined = (p.tensors[i] for i in (1, 2, 3))
    assert relu.alias_of == exp_.alias_of == joined.id
    assert (relu.offset, exp_.offset) == (joined.offset, joined.offset + KB)
    assert joined.start <= relu.start and joined.end >= exp_.end  # holds them while they live
    _no_live_overlap(p)
    _runs_like_the_evaluator(JOIN)


NESTED = """def @main(%x: Tensor[(1, 256), float32]) {
  %0 = nn.relu(%x);
  %1 = exp(%x);
  %2 = concatenate((%0, %1), axis=1);
  %3 = negative(%x);
  %4 = concatenate((%3, %2), axis=1);
  sigmoid(%4)
}"""


def test_a_concatenation_inside_another_lives_in_its_slice():
    p = _plan(NESTED)
    assert not [k for k in _kernels(p) if "concatenate" in k]
    outer = p.tensors[5]
    offsets = {i: p.tensors[i].offset - outer.offset for i in (1, 2, 3, 4)}
    # slots in the order main's walk meets them: 1 negative, 2 relu, 3 exp, 4 the inner join
    assert offsets == {1: 0, 4: KB, 2: KB, 3: 2 * KB}
    assert {p.tensors[i].alias_of for i in (1, 2, 3, 4)} == {outer.id}
    _no_live_overlap(p)
    _runs_like_the_evaluator(NESTED)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("%0 = concatenate((%x, nn.relu(%x)), axis=1); negative(%0)", "an input of main"),
        ("%0 = nn.relu(%x); %1 = concatenate((%0, %0), axis=1); negative(%1)", "twice"),
        ("concatenate((nn.relu(%x), exp(%x)), axis=1)", "main's result"),
        (
            "%0 = reshape(nn.relu(%x), newshape=[2, 128]); %1 = reshape(exp(%x), newshape=[2, 128]);"
            " %2 = concatenate((%0, %1), axis=1); negative(%2)",
            "slices that are not contiguous (rows of 2)",
        ),
    ],
)
def test_a_concatenation_whose_inputs_cannot_share_stays_a_kernel(body, why):
    text = f"def @main(%x: Tensor[(1, 256), float32]) {{ {body} }}"
    p = _plan(text)
    assert "fused_concatenate" in _kernels(p), why
    _no_live_overlap(p)
    _runs_like_the_evaluator(text)


def test_a_tensor_two_concatenations_want_goes_into_the_first():
    text = """def @main(%x: Tensor[(1, 256), float32]) {
      %0 = nn.relu(%x);
      %1 = exp(%x);
      %2 = concatenate((%0, %1), axis=1);
      %3 = concatenate((%1, %0), axis=1);
      add(%2, %3)
    }"""
    p = _plan(text)
    assert _kernels(p).count("fused_concatenate") == 1  # one kernel for both: the second copies
    assert p.tensors[1].alias_of == p.tensors[3].id
    _no_live_overlap(p)
    _runs_like_the_evaluator(text)


@st.composite
def joining_programs(draw):
    """Random programs on (1, 64) tensors: unary and binary calls, and concatenations of two
    or three values whose slice is taken back (strided_slice), so later calls read both the
    joined tensors and their parts."""
    lines, values = [], ["%x"]
    for k in range(draw(st.integers(2, 12))):
        kind = draw(st.sampled_from(["unary", "add", "join"]))
        if kind == "join" and len(values) > 1:
            parts = draw(st.lists(st.sampled_from(values), min_size=2, max_size=3))
            start = 64 * draw(st.integers(0, len(parts) - 1))
            joined = f"concatenate(({', '.join(parts)}), axis=1)"
            lines.append(f"  %{1000 + k} = {joined};")
            lines.append(
                f"  %{k} = strided_slice(%{1000 + k}, begin=[0, {start}], end=[1, {start + 64}]);"
            )
        elif kind == "add" and len(values) > 1:
            a, b = draw(st.sampled_from(values)), draw(st.sampled_from(values))
            lines.append(f"  %{k} = add({a}, {b});")
        else:
            op = draw(st.sampled_from(["nn.relu", "exp", "negative", "sigmoid"]))
            lines.append(f"  %{k} = {op}({draw(st.sampled_from(values))});")
        values.append(f"%{k}")
    outs = draw(st.lists(st.sampled_from(values[1:]), min_size=1, max_size=2, unique=True))
    body = "\n".join(lines)
    return f"def @main(%x: Tensor[(1, 64), float32]) {{\n{body}\n  ({', '.join(outs)})\n}}"


@settings(max_examples=25, deadline=None)
@given(joining_programs())
def test_random_programs_with_concatenations_run_and_never_overlap_live_tensors(text):
    _no_live_overlap(_plan(text))
    _runs_like_the_evaluator(text)
