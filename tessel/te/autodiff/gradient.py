"""Reverse-mode differentiation of tensor expressions (te.gradient).

Walks the computes from the output back to the inputs. For each read of a tensor inside a
compute, the chain rule gives, per iteration, `dY[i] * d body / d read`; `scatter` then sums that
over the iterations reading each element, found by solving the read's indices (the RFC's remapping
of iteration variables). No Jacobian is ever built: every intermediate has the shape of a tensor
of the forward computation (or of one reduction's iterations, for prod).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.structural import structural_equal
from tessel.support.dtype import DataType
from tessel.support.errors import UserError
from tessel.te.autodiff.derivative import NotDifferentiableError, derivative, plus, times
from tessel.te.autodiff.reduction import reducer_kind, reduction_factors
from tessel.te.autodiff.scatter import scatter
from tessel.te.create_prim_func import topological_order
from tessel.te.operation import compute
from tessel.te.tensor import ComputeOp, PlaceholderOp, ProducerLoad, Tensor
from tessel.tir.reduce_expr import Reduce


def gradient(
    output: Tensor, inputs: Tensor | Sequence[Tensor], head: Tensor | None = None
) -> list[Tensor]:
    """The gradients of `output` with respect to each of `inputs`, as tensors of the inputs'
    shapes: the vector-Jacobian product with `head` (a tensor of the output's shape), or the
    gradient of the sum of the output's elements when `head` is None.

    TVM's `te.gradient` with `head=None` returns the full Jacobian; Tessel never materialises
    one, so head=None means a head of ones.
    """
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    _check_arguments(output, inputs, head)
    targets = set(inputs)
    depends = _dependence(output, targets)
    contributions: dict[Tensor, list[Tensor]] = {}
    adjoints: dict[Tensor, Tensor | None] = {output: head}
    for op in reversed(topological_order([output.op])):
        if not isinstance(op, ComputeOp) or any(t in targets for t in op.outputs):
            continue
        for index, result in enumerate(op.outputs):
            if result not in adjoints and result not in contributions:
                continue
            adjoint = adjoints.get(result) if result is output else _total(result, contributions)
            adjoints[result] = adjoint
            for tensor in op.input_tensors:
                if depends.get(tensor):
                    contributions.setdefault(tensor, []).extend(
                        _located(
                            op,
                            tensor,
                            lambda op=op, k=index, t=tensor, a=adjoint: _contributions(op, k, t, a),
                        )
                    )
    grads = [_result(t, output, head, contributions) for t in inputs]
    return _distinct(grads, inputs, output, head)


def _distinct(
    grads: list[Tensor], inputs: list[Tensor], output: Tensor, head: Tensor | None
) -> list[Tensor]:
    """The gradients, each its own tensor: one that is the head, the output, an input or an
    earlier gradient (the identity shortcut passes the head through unchanged) becomes a copy,
    so that every gradient gets its own output buffer in a PrimFunc."""
    taken = {*inputs, output} | ({head} if head is not None else set())
    result = []
    for grad, tensor in zip(grads, inputs, strict=True):
        if grad in taken:
            grad = compute(
                grad.shape,
                lambda *x, g=grad: g[x],
                name=f"{_base(tensor)}_grad",
                varargs_names=[f"ax{d}" for d in range(grad.ndim)],
            )
        taken.add(grad)
        result.append(grad)
    return result


def _check_arguments(output: Tensor, inputs: list[Tensor], head: Tensor | None) -> None:
    for tensor in [output, *inputs]:
        if not isinstance(tensor, Tensor):
            raise UserError(
                f"gradient: expected te.Tensor arguments, got {tensor!r}",
                rule="te.gradient.argument",
            )
    for tensor in inputs:
        if not DataType.of(tensor.dtype).is_float:
            raise NotDifferentiableError(
                f"gradient with respect to `{tensor.name}` of {tensor.dtype}: only float tensors "
                "have gradients",
                rule="te.gradient.dtype",
            )
    if head is None:
        return
    same_shape = len(head.shape) == len(output.shape) and all(
        builders.is_const_int(a - b, 0) or a is b
        for a, b in zip(head.shape, output.shape, strict=False)
    )
    if not same_shape or head.dtype != output.dtype:
        raise UserError(
            f"gradient: head must have the output's shape {list(output.shape)} and dtype "
            f"{output.dtype}, got {list(head.shape)} and {head.dtype}",
            rule="te.gradient.head",
        )


def _dependence(output: Tensor, targets: set[Tensor]) -> dict[Tensor, bool]:
    """For every tensor `output` reads (transitively), whether it depends on a target."""
    depends: dict[Tensor, bool] = {}
    for op in topological_order([output.op]):
        for tensor in op.outputs:  # type: ignore[attr-defined]  # every op has outputs
            depends[tensor] = tensor in targets or any(
                depends.get(t, False) for t in op.input_tensors
            )
    return depends


def _total(tensor: Tensor, contributions: dict[Tensor, list[Tensor]]) -> Tensor:
    """The sum of a tensor's gradient contributions (one tensor when there is one)."""
    parts = contributions.get(tensor, [])
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return compute(
            tensor.shape, lambda *x: builders.const(0, tensor.dtype), name=f"{_base(tensor)}_grad"
        )

    def add(*x: Var) -> PrimExpr:
        total = parts[0][x]
        for part in parts[1:]:
            total = total + part[x]
        return total

    return compute(
        tensor.shape,
        add,
        name=f"{_base(tensor)}_grad",
        varargs_names=[f"ax{d}" for d in range(tensor.ndim)],
    )


def _result(
    tensor: Tensor, output: Tensor, head: Tensor | None, contributions: dict[Tensor, list[Tensor]]
) -> Tensor:
    if tensor is output:
        if head is not None:
            return head
        return compute(
            tensor.shape, lambda *x: builders.const(1, tensor.dtype), name=f"{_base(tensor)}_grad"
        )
    return _total(tensor, contributions)


def _base(tensor: Tensor) -> str:
    return tensor.name.replace(".", "_")


def _reads_of(expr: PrimExpr, tensor: Tensor) -> list[list[ProducerLoad]]:
    """The reads of `tensor` in `expr`, grouped by index (`y * y` reads one element twice, and
    its gradient is one contribution, not two)."""
    groups: list[list[ProducerLoad]] = []
    loads = dict.fromkeys(
        n for n in post_order(expr) if isinstance(n, ProducerLoad) and n.producer is tensor
    )
    for load in loads:
        for group in groups:
            if all(
                structural_equal(a, b, map_free_vars=False)
                for a, b in zip(group[0].indices, load.indices, strict=True)
            ):
                group.append(load)
                break
        else:
            groups.append([load])
    return groups


def _derivative(expr: PrimExpr, reads: list[ProducerLoad]) -> PrimExpr:
    """d expr / d element, for reads that all read the same element."""
    result = derivative(expr, reads[0])
    for load in reads[1:]:
        result = plus(result, derivative(expr, load))
    return result


def _is_identity(
    op: ComputeOp, tensor: Tensor, indices: tuple[PrimExpr, ...], value: PrimExpr, head: PrimExpr
) -> bool:
    """True if the contribution is the adjoint itself (an elementwise read with derivative 1)."""
    spatial = tuple(iv.var for iv in op.axis)
    same_shape = len(tensor.shape) == len(spatial) and all(
        structural_equal(a, iv.dom.extent) for a, iv in zip(tensor.shape, op.axis, strict=True)
    )
    return (
        value is head and same_shape and all(a is b for a, b in zip(indices, spatial, strict=True))
    )


def _located(op: ComputeOp, tensor: Tensor, build: Callable[[], list[Tensor]]) -> list[Tensor]:
    """Run `build`; a NotDifferentiableError then names the compute and the tensor."""
    try:
        return build()
    except NotDifferentiableError as err:
        raise NotDifferentiableError(
            f"compute `{op.name}`, gradient with respect to `{tensor.name}`: {err.message}",
            rule=err.rule,
            hint=err.hint,
        ) from err


def _contributions(
    op: ComputeOp, index: int, tensor: Tensor, adjoint: Tensor | None
) -> list[Tensor]:
    """Gradient contributions to `tensor` from output `index` of `op`, one per read."""
    body = op.body[index]
    spatial = tuple(iv.var for iv in op.axis)
    head = builders.const(1, op.output(index).dtype) if adjoint is None else adjoint[spatial]
    iters = {iv.var: Range(iv.dom.min, iv.dom.extent) for iv in op.axis}
    name = f"{_base(tensor)}_grad_{op.name}"
    if not isinstance(body, Reduce):
        results = []
        for reads in _reads_of(body, tensor):
            value = times(head, _derivative(body, reads))
            if (
                adjoint is not None
                and not isinstance(adjoint.op, PlaceholderOp)
                and _is_identity(op, tensor, reads[0].indices, value, head)
            ):
                results.append(adjoint)  # no copy of the adjoint
            else:
                results.append(scatter(tensor, reads[0].indices, value, iters, [], name))
        return results
    kind = reducer_kind(body)
    factors = reduction_factors(op, index, kind)
    results = []
    reduce_iters = iters | {iv.var: Range(iv.dom.min, iv.dom.extent) for iv in body.axis}
    for reads in _reads_of(body.source[0], tensor):
        value = times(head, _derivative(body.source[0], reads))
        if factors.source_factor is not None:
            value = times(value, factors.source_factor)
        results.append(
            scatter(tensor, reads[0].indices, value, reduce_iters, factors.source_conditions, name)
        )
    for reads in _reads_of(body.init[0], tensor) if body.init else []:
        value = times(head, _derivative(body.init[0], reads))
        if factors.init_factor is not None:
            value = times(value, factors.init_factor)
        results.append(
            scatter(tensor, reads[0].indices, value, iters, factors.init_conditions, name)
        )
    return results
