"""TensorIR from tensor expressions: one block per compute, as TVM's te.create_prim_func builds."""

from __future__ import annotations

from collections.abc import Sequence

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import Mutator
from tessel.support.dtype import handle
from tessel.support.errors import UserError
from tessel.support.names import unique_name
from tessel.te.tensor import ComputeOp, Operation, PlaceholderOp, ProducerLoad, Tensor
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.analysis.interval import mentions
from tessel.tir.block import Block, BlockRealize, IterVar
from tessel.tir.buffer import Buffer, BufferLoad, decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.reduce_expr import Reduce
from tessel.tir.stmt import BufferStore, For, ForKind, IfThenElse, LetStmt, SeqStmt, Stmt


def create_prim_func(args: Sequence[Tensor | Var], name: str = "main") -> PrimFunc:
    """A PrimFunc computing the given output tensors from the given inputs: `args` lists its
    parameters in order (tensors, and scalar Vars); computes not listed get internal buffers."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    for arg in args:
        if not isinstance(arg, Tensor | Var):
            raise UserError(
                f"create_prim_func: arguments are tensors or scalar vars, got {arg!r}",
                rule="te.create_prim_func-arg",
            )
    _check_distinct(args)
    ops = topological_order([t.op for t in tensors])
    _check_inputs_listed(ops, tensors)
    buffers = _Buffers(ops)
    params, buffer_map = [], {}
    for arg in args:
        if isinstance(arg, Var):
            params.append(arg)
            continue
        buffer = buffers.of(arg)
        param = Var(buffer.name, handle)
        params.append(param)
        buffer_map[param] = buffer
    listed = set(tensors)
    intermediates = [
        buffers.of(t)
        for op in ops
        if isinstance(op, ComputeOp)
        for t in _outputs(op)
        if t not in listed
    ]
    block_names: set[str] = set()
    nests = [
        _loop_nest(op, buffers, unique_name(op.name, block_names))
        for op in ops
        if isinstance(op, ComputeOp)
    ]
    if not nests:
        raise UserError(
            "create_prim_func: nothing to compute (no compute among the arguments)",
            rule="te.create_prim_func-empty",
        )
    root = Block(
        (),
        (),
        (),
        "root",
        nests[0] if len(nests) == 1 else SeqStmt(tuple(nests)),
        alloc_buffers=tuple(intermediates),
    )
    body = BlockRealize((), builders.const(True), root)
    return PrimFunc(
        tuple(params), body, None, buffer_map, {"global_symbol": name, "tir.noalias": True}
    )


def topological_order(roots: Sequence[Operation]) -> list[Operation]:
    """Every operation `roots` depend on, producers before consumers."""
    order: list[Operation] = []
    seen: set[Operation] = set()
    stack: list[tuple[Operation, bool]] = [(op, False) for op in reversed(roots)]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            order.append(op)
            continue
        if op in seen:
            continue
        seen.add(op)
        stack.append((op, True))
        stack.extend((t.op, False) for t in reversed(op.input_tensors) if t.op not in seen)
    return order


def _outputs(op: Operation) -> tuple[Tensor, ...]:
    return op.outputs  # type: ignore[attr-defined]  # every concrete operation has outputs


def _check_distinct(args: Sequence[Tensor | Var]) -> None:
    """Each parameter is its own tensor or var: a tensor listed twice would give two parameters
    one buffer, and a call passing two arrays would write only one of them."""
    first: dict[int, int] = {}
    for position, arg in enumerate(args):
        earlier = first.setdefault(id(arg), position)
        if earlier != position:
            what = "tensor" if isinstance(arg, Tensor) else "var"
            raise UserError(
                f"create_prim_func: arguments {earlier} and {position} are the same {what} "
                f"`{arg.name}`; each parameter needs its own",
                rule="te.create_prim_func-repeated-arg",
                hint="list it once, or list a copy: te.compute(t.shape, lambda *i: t(*i))",
            )


def _check_inputs_listed(ops: list[Operation], tensors: list[Tensor]) -> None:
    listed = {t.op for t in tensors}
    missing = [op.name for op in ops if isinstance(op, PlaceholderOp) and op not in listed]
    if missing:
        raise UserError(
            f"create_prim_func: the placeholders {missing} are read but not among the arguments",
            rule="te.create_prim_func-missing-input",
            hint="list every input placeholder (and every output) in the argument list",
        )


class _Buffers:
    """One buffer per tensor, with unique names."""

    def __init__(self, ops: list[Operation]):
        self.buffers: dict[Tensor, Buffer] = {}
        used: set[str] = set()
        for op in ops:
            for tensor in _outputs(op):
                name = unique_name(tensor.name.replace(".", "_"), used)
                self.buffers[tensor] = decl_buffer(tensor.shape, tensor.dtype, name)

    def of(self, tensor: Tensor) -> Buffer:
        return self.buffers[tensor]


class _LoadsToBuffers(Mutator):
    """ProducerLoad -> BufferLoad of the tensor's buffer, axis variables -> block iterators."""

    def __init__(self, buffers: _Buffers, mapping: dict[Var, PrimExpr]):
        super().__init__()
        self.buffers, self.mapping = buffers, mapping

    def visit_Var(self, var: Var) -> PrimExpr:
        return self.mapping.get(var, var)

    def visit_ProducerLoad(self, load: ProducerLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in load.indices)
        return BufferLoad(self.buffers.of(load.producer), indices)


def _loop_nest(op: ComputeOp, buffers: _Buffers, name: str) -> Stmt:
    """`for` loops over the axes, then the reduction axes, around the compute's block. A
    reduction over an empty domain (a reduction axis of extent 0: a MatMul with an empty inner
    dimension) is its initial value: the block stores that, with no reduction loops, since
    an init inside loops that never run would leave the output unwritten."""
    empty = _empty_reduction(op)
    axes = list(op.axis) + ([] if empty else list(op.reduce_axis))
    loop_vars = [Var(iv.var.name, iv.var.dtype) for iv in axes]
    block_vars = [Var(f"v_{iv.var.name}", iv.var.dtype) for iv in axes]
    iter_vars = tuple(
        IterVar(Range(iv.dom.min, iv.dom.extent), bv, iv.iter_type)
        for iv, bv in zip(axes, block_vars, strict=True)
    )
    convert = _LoadsToBuffers(
        buffers, {iv.var: bv for iv, bv in zip(axes, block_vars, strict=True)}
    )
    outputs = [buffers.of(t) for t in op.outputs]
    indices = tuple(block_vars[: len(op.axis)])
    init, body = _block_body(op, outputs, indices, convert)
    if empty:
        init, body = None, init
    block = Block(iter_vars, (), (), name, body, init)
    reads, writes = infer_access_regions(block)
    block = Block(iter_vars, reads, writes, name, body, init, annotations=op.attrs)
    bindings = tuple(
        lv if builders.is_const_int(iv.dom.min, 0) else lv + iv.dom.min
        for lv, iv in zip(loop_vars, axes, strict=True)
    )
    nest: Stmt = BlockRealize(bindings, builders.const(True), block)
    for loop_var, iv in reversed(list(zip(loop_vars, axes, strict=True))):
        nest = For(loop_var, builders.const(0, loop_var.dtype), iv.dom.extent, ForKind.SERIAL, nest)
    return nest


def _empty_reduction(op: ComputeOp) -> bool:
    return isinstance(op.body[0], Reduce) and any(
        builders.is_const_int(iv.dom.extent, 0) for iv in op.reduce_axis
    )


def _block_body(
    op: ComputeOp, outputs: list[Buffer], indices: tuple[Var, ...], convert: _LoadsToBuffers
) -> tuple[Stmt | None, Stmt]:
    if not isinstance(op.body[0], Reduce):
        stores = [
            BufferStore(b, convert.visit(e), indices) for b, e in zip(outputs, op.body, strict=True)
        ]
        return None, _seq(stores)
    reduce = op.body[0]
    _check_init(op, reduce)
    init_values = [convert.visit(v) for v in reduce.initial_values()]
    init = _seq([BufferStore(b, v, indices) for b, v in zip(outputs, init_values, strict=True)])
    accumulators = tuple(BufferLoad(b, indices) for b in outputs)
    sources = tuple(convert.visit(s) for s in reduce.source)
    results = reduce.combiner.combine(accumulators, sources)
    update = _update(outputs, indices, results)
    if not builders.is_const_int(reduce.condition, 1):
        update = IfThenElse(convert.visit(reduce.condition), update)
    return init, update


def _update(outputs: list[Buffer], indices: tuple[Var, ...], results: tuple[PrimExpr, ...]) -> Stmt:
    """Store each combined value; with several, bind them first so every one reads the old
    accumulators (as TVM does for argmax)."""
    if len(outputs) == 1:
        return BufferStore(outputs[0], results[0], indices)
    temps = [Var(f"v_{b.name}", r.dtype) for b, r in zip(outputs, results, strict=True)]
    stmt: Stmt = _seq([BufferStore(b, t, indices) for b, t in zip(outputs, temps, strict=True)])
    for temp, result in reversed(list(zip(temps, results, strict=True))):
        stmt = LetStmt(temp, result, stmt)
    return stmt


def _check_init(op: ComputeOp, reduce: Reduce) -> None:
    reduce_vars = {iv.var: None for iv in reduce.axis}
    for value in reduce.init:
        if mentions(value, reduce_vars):
            raise UserError(
                f"compute `{op.name}`: the init of a reduction may not use its reduction axes",
                rule="te.reduce-init",
            )


def _seq(stmts: list[Stmt]) -> Stmt:
    return stmts[0] if len(stmts) == 1 else SeqStmt(tuple(stmts))
