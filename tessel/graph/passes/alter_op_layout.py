"""AlterOpLayout: NCHW convolutions rewritten to channel-blocked ones (NCHW[x]c, TVM's
AlterOpLayout to contrib_conv2d_NCHWc on x86), with the blocked layout carried from one
convolution to the next.

In NCHW, a schedule that vectorizes output channels must transpose: the padding copy gathers 16
channel planes into a vector, and the write-back scatters a tile [x, f] into channel rows.
MobileNetV2 spent a quarter of its time in those copies. In NCHW16c every convolution reads and
writes whole vectors of 16 channels, as onnxruntime's NCHWc kernels do.

For each `nn.conv2d` (NCHW data, OIHW kernel, float32; groups 1, or depthwise with one filter per
channel; grouped ones below), with x = block(C), y = block(O) (block(n): the largest power of
two up to the target's float32 lanes dividing n; the conv is kept when y < 4):

    conv2d(%d, %w)  ->  layout_transform(contrib_conv2d_NCHWc(T(%d), T'(%w)), NCHW[y]c -> NCHW)

T(%d) is `layout_transform(%d, NCHW -> NCHW[x]c)`, or, when %d is itself the transform back of
a blocked result, that result (the pair cancels). T'(%w) transforms the kernel to OIHW[x]i[y]o
(OIHW1i[y]o depthwise); FoldConstant folds it for a constant weight, so the model loads packed
weights. Output channels that would block by less than the lanes are padded to the next multiple
of them when that adds at most half (24 -> 32, as onnxruntime pads): zero filters (and zero bias)
make the added channels, the next conv gives them zero weights, and the transform back slices
them off (`strided_slice`). The blocked result then flows through the operators that do not care
about the layout, so the next convolution finds it blocked:

- an elementwise operator (clip, relu, sigmoid, cast, ...) of a blocked tensor (of a padded one,
  only those that keep the added channels finite: relu, clip, sigmoid, tanh, ...);
- `nn.bias_add(%x, %b, axis=1)`: `add(%x', reshape(%b, [C // y, 1, 1, y]))`;
- `add`, `subtract`, `multiply`, `divide`, `maximum`, `minimum` of two tensors of one NCHW shape
  (a residual add), or of a map and a per-channel (N, C, 1, 1) tensor broadcast over it (a
  squeeze-and-excitation's scale), one of them blocked: the other is transformed too (no
  division of padded tensors); of a blocked tensor and a single value (a hard sigmoid's
  `x * a + b`): the value as it is;
- max and average pooling, global or not: the same pool with layout NCHW[y]c; `mean`, `sum`,
  `max` and `min` over H and W keeping the dimensions (timm's squeeze, `x.mean((2, 3),
  keepdim=True)`): the same reduction over the blocked H and W;
- `concatenate` along the channels of tensors one of which is blocked and none padded, where
  it is the inputs' one reader: the blocked inputs joined in the smallest of their blocks
  (which must divide every input), so an Inception block's branches meet without a transform,
  and the memory plan has each branch write its slice of the result in place.

A grouped convolution (not depthwise) whose group of outputs blocks by at least 4 becomes a
grouped `contrib_conv2d_NCHWc`, y = block(a group's outputs) so that each block of outputs lies
in one group, reading its input in the producer's blocks where those nest with the groups (a
block of 16 holds two groups of 8, or a group of 32 spans two blocks): RegNet's and ResNeXt's
grouped 3x3 convs then sit between their 1x1 convs without a transform either side.

Every other operator reads the NCHW tensor through the transform back, which is computed once
however many read it; a transform nobody reads is dropped with the expression."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from tessel.graph.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem
from tessel.graph.op import OpPattern, get_op
from tessel.graph.op.op_def import Attrs
from tessel.graph.op.reduce import reduced_axes
from tessel.graph.passes.rewriter import ExprRewriter, is_primitive, rewrite_functions
from tessel.graph.traversal import children, post_order_exprs
from tessel.graph.ty import TensorType
from tessel.ir.expr import Op
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext
from tessel.schedule.rules.default import host_target

_BINARY = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum"})
# What keeps the added channels of a padded tensor finite (bounded functions of finite values).
_PADDED_SAFE = frozenset(
    {
        "add",
        "subtract",
        "multiply",
        "maximum",
        "minimum",
        "nn.relu",
        "clip",
        "sigmoid",
        "tanh",
        "nn.leaky_relu",
        "negative",
        "abs",
    }
)
_POOLS = frozenset(
    {"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d"}
)
# Reductions that, over H and W with the dimensions kept, are a global pool in any layout (of
# finite values, finite: the added channels stay harmless).
_SPATIAL_REDUCTIONS = frozenset({"mean", "sum", "max", "min"})
MIN_BLOCK = 4  # fewer output channels a vector than this: the NCHW schedule is better


def channel_block(channels: int, lanes: int) -> int:
    """The largest power of two up to `lanes` that divides `channels`."""
    block = 1
    while block * 2 <= lanes and channels % (block * 2) == 0:
        block *= 2
    return block


def _transform(data: Expr, src: str, dst: str) -> Call:
    return Call(Op("layout_transform"), (data,), {"src_layout": src, "dst_layout": dst})


def _tensor(expr: Expr) -> TensorType | None:
    ty = expr.checked_type
    return ty if isinstance(ty, TensorType) else None


@dataclass(frozen=True)
class _Blocked:
    """A tensor in NCHW[block]c, for an NCHW tensor of `channels` channels: `padded` of them
    (more than `channels` when zero filters were added to fill the blocks; the added channels
    hold finite values no consumer reads: a conv gives them zero weights)."""

    tensor: Expr
    block: int
    channels: int
    padded: int


def _pad_axis(expr: Expr, ndim: int, axis: int, after: int) -> Expr:
    """`expr` padded with `after` zeros at the end of `axis`."""
    widths = tuple((0, after if k == axis else 0) for k in range(ndim))
    return Call(Op("nn.pad"), (expr, Constant(np.float32(0))), {"pad_width": widths})


def _plain_float32_conv(attrs: Attrs, *types: TensorType) -> bool:
    """Whether a conv2d is NCHW with an OIHW kernel and no output layout, all float32, of
    static shapes (the blocked operators and their schedules take static shapes only)."""
    if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW" or attrs.out_layout:
        return False
    if not all(ty.is_static for ty in types):
        return False
    return {ty.dtype for ty in types} == {"float32"}


def _elements(ty: TensorType | None) -> int:
    """The elements of a tensor of static shape; 0 when a dimension is not a number."""
    dims = ty.shape if ty is not None else ()
    return math.prod(dims) if all(isinstance(d, int) for d in dims) else 0


def _reads_blocked(reader: Expr) -> bool:
    """Whether `reader` takes its NCHW input in the blocked layout once rewritten: a
    convolution, a pool, a batch norm (so a join it reads may be blocked)."""
    if not isinstance(reader, Call) or not isinstance(reader.op, Op):
        return False
    return reader.op.name in _POOLS or reader.op.name in ("nn.conv2d", "nn.batch_norm")


def _per_channel(vector: Expr, blocked: _Blocked) -> Expr:
    """A vector of one value a channel laid out as `blocked`'s channels, to broadcast over it:
    zeros for its added channels, reshaped to (C // block, 1, 1, block)."""
    if blocked.padded > blocked.channels:
        vector = _pad_axis(vector, 1, 0, blocked.padded - blocked.channels)
    shape = (blocked.padded // blocked.block, 1, 1, blocked.block)
    return Call(Op("reshape"), (vector,), {"newshape": shape})


class _Blocker(ExprRewriter):
    """The rewrite; `blocked` maps each transform back it made to the blocked tensor it reads,
    so a consumer that takes the blocked layout reads that tensor instead."""

    def __init__(self, lanes: int, func: Function) -> None:
        super().__init__()
        self.lanes, self.func = lanes, func
        self.blocked: dict[int, _Blocked] = {}
        self._readers: dict[int, list[Expr]] | None = None
        # (id of an NCHW tensor, block, padded channels) -> (the tensor, kept alive so its id
        # stays its own; its blocked expression)
        self._as_blocked_memo: dict[tuple[int, int, int], tuple[Expr, Expr]] = {}

    def uses(self, expr: Expr) -> int:
        """How many expressions of the function (before the rewrite) read `expr`, once per
        reader."""
        return len(self.readers(expr))

    def readers(self, expr: Expr) -> list[Expr]:
        """The expressions of the function (before the rewrite) that read `expr`, each once;
        found at the first question (only a concatenation asks)."""
        if self._readers is None:
            self._readers = {}
            for node in post_order_exprs(self.func):
                for child in {id(c): c for c in children(node)}.values():
                    self._readers.setdefault(id(child), []).append(node)
        return self._readers.get(id(expr), [])

    def enters(self, func: Function) -> bool:
        return not is_primitive(func)

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        if isinstance(new, TupleGetItem) and isinstance(old, TupleGetItem):
            return self._batch_norm(old, new)
        if not isinstance(new, Call) or not isinstance(new.op, Op):
            return new
        name = new.op.name
        if name == "nn.conv2d":
            return self._conv2d(old, new)
        if name == "nn.bias_add":
            return self._bias_add(old, new)
        if name in _BINARY:
            return self._binary(old, new)
        if name in _POOLS:
            return self._pool(new)
        if name in _SPATIAL_REDUCTIONS:
            return self._spatial_reduction(old, new)
        if get_op(name).pattern == OpPattern.ELEMWISE and len(new.args) == 1:
            return self._unary(new)
        if name == "concatenate":
            return self._concatenate(old, new)
        return new

    # -- producing and reading blocked tensors ------------------------------------------------

    def _back(self, blocked: _Blocked) -> Expr:
        """The NCHW tensor of `blocked`, remembered as such: the transform back, then the
        added channels sliced off."""
        back: Expr = _transform(blocked.tensor, f"NCHW{blocked.block}c", "NCHW")
        if blocked.padded != blocked.channels:
            back = Call(
                Op("strided_slice"),
                (back,),
                {"begin": (0,), "end": (blocked.channels,), "axes": (1,)},
            )
        self.blocked[id(back)] = blocked
        return back

    def _as_blocked(self, expr: Expr, block: int, padded: int, shape: tuple[int, ...]) -> Expr:
        """`expr` (an NCHW tensor of `shape`) in NCHW[block]c with `padded` channels: the
        blocked tensor it is the transform back of when that is it, else a transform (a
        reshape for a block of 1, which the memory plan makes free for an intermediate). One
        expression for each tensor, block and padding, however many readers ask (DenseNet's
        input is read by its first conv and by every join of its first block)."""
        key = (id(expr), block, padded)
        if key not in self._as_blocked_memo:
            self._as_blocked_memo[key] = (expr, self._to_blocked(expr, block, padded, shape))
        return self._as_blocked_memo[key][1]

    def _to_blocked(self, expr: Expr, block: int, padded: int, shape: tuple[int, ...]) -> Expr:
        known = self.blocked.get(id(expr))
        if known is not None and known.padded == padded:
            if known.block == block:
                return known.tensor
            return _transform(known.tensor, f"NCHW{known.block}c", f"NCHW{block}c")
        if padded > shape[1]:
            expr = _pad_axis(expr, 4, 1, padded - shape[1])
        if block == 1:
            return Call(Op("reshape"), (expr,), {"newshape": (shape[0], padded, *shape[2:], 1)})
        return _transform(expr, "NCHW", f"NCHW{block}c")

    def _padded_width(self, channels: int) -> int:
        """The channels a conv's output gets: `channels`, or the next multiple of the lanes
        when that fills whole vectors for at most half as many again (24 -> 32, as
        onnxruntime pads; 6 stays 6)."""
        if channel_block(channels, self.lanes) == self.lanes:
            return channels
        padded = -(-channels // self.lanes) * self.lanes
        return padded if 2 * padded <= 3 * channels else channels

    # -- the operators ------------------------------------------------------------------------

    def _conv2d(self, old: Call, new: Call) -> Expr:
        data, weight, out = _tensor(old.args[0]), _tensor(old.args[1]), _tensor(old)
        attrs = get_op("nn.conv2d").normalize_attrs(new.attrs)
        if (
            data is None
            or weight is None
            or out is None
            or not _plain_float32_conv(attrs, data, weight, out)
        ):
            return new
        channels, filters = data.shape[1], weight.shape[0]
        depthwise = attrs.groups == channels == filters and weight.shape[1] == 1
        if attrs.groups != 1 and not depthwise:
            return self._grouped_conv2d(new, attrs, data.shape, weight.shape)
        known = self.blocked.get(id(new.args[0]))
        # The input's channels as the producer left them (padded with zero-weight ones).
        inputs = known.padded if known is not None else channels
        outputs = inputs if depthwise else self._padded_width(filters)
        x, y = channel_block(inputs, self.lanes), channel_block(outputs, self.lanes)
        if known is not None and not depthwise:
            # The producer's blocks as they are (a grouped conv's 8 after RegNet's grouped 3x3):
            # a conv reads any block as fast, and a transform between blocks is a gather.
            x = known.block
        if y < MIN_BLOCK or (depthwise and x != y):
            return new
        kernel = new.args[1]
        if not depthwise and inputs > channels:  # zero weights for the padded input channels
            kernel = _pad_axis(kernel, 4, 1, inputs - channels)
        if outputs > filters:  # zero filters: the padded output channels
            kernel = _pad_axis(kernel, 4, 0, outputs - filters)
        kernel_layout = f"OIHW1i{y}o" if depthwise else f"OIHW{x}i{y}o"
        op = "nn.contrib_depthwise_conv2d_NCHWc" if depthwise else "nn.contrib_conv2d_NCHWc"
        blocked_attrs = {**new.attrs, "data_layout": f"NCHW{x}c", "kernel_layout": kernel_layout,
                         "out_layout": f"NCHW{y}c"}  # fmt: skip
        if attrs.channels is not None:
            blocked_attrs["channels"] = outputs
        if depthwise:
            blocked_attrs["groups"] = outputs
        conv = Call(
            Op(op),
            (
                self._as_blocked(new.args[0], x, inputs, data.shape),
                _transform(kernel, "OIHW", kernel_layout),
            ),
            blocked_attrs,
        )
        return self._back(_Blocked(conv, y, filters, outputs))

    def _grouped_conv2d(
        self, new: Call, attrs: Attrs, shape: tuple[int, ...], weight: tuple[int, ...]
    ) -> Expr:
        """A grouped convolution blocked so that a block of output channels lies in one group
        (y divides a group's outputs) and the input blocks and groups nest (x divides a
        group's channels or a group's channels divide x): it reads its producer's blocks as
        they are, so a grouped 3x3 between two 1x1 convs (RegNet, ResNeXt) needs no
        transform. The producer's added channels are zero groups of their own, with zero
        filters."""
        channels, filters, per_group = shape[1], weight[0], weight[1]
        known = self.blocked.get(id(new.args[0]))
        inputs = known.padded if known is not None else channels
        if (inputs - channels) % per_group:
            return new
        all_groups, outputs_a_group = inputs // per_group, filters // attrs.groups
        outputs = all_groups * outputs_a_group
        x = known.block if known is not None else channel_block(inputs, self.lanes)
        y = channel_block(outputs_a_group, self.lanes)
        if x % per_group == 0:
            k = per_group
        elif per_group % x == 0:
            k = x
        else:
            return new
        if y < MIN_BLOCK:
            return new
        kernel = new.args[1]
        if outputs > filters:  # zero filters: the added groups
            kernel = _pad_axis(kernel, 4, 0, outputs - filters)
        kernel_layout = f"OIHW{k}i{y}o"
        blocked_attrs = {**new.attrs, "data_layout": f"NCHW{x}c", "kernel_layout": kernel_layout,
                         "out_layout": f"NCHW{y}c", "groups": all_groups}  # fmt: skip
        if attrs.channels is not None:
            blocked_attrs["channels"] = outputs
        conv = Call(
            Op("nn.contrib_conv2d_NCHWc"),
            (
                self._as_blocked(new.args[0], x, inputs, shape),
                _transform(kernel, "OIHW", kernel_layout),
            ),
            blocked_attrs,
        )
        return self._back(_Blocked(conv, y, filters, outputs))

    def _bias_add(self, old: Call, new: Call) -> Expr:
        known = self.blocked.get(id(new.args[0]))
        data, bias = _tensor(old.args[0]), _tensor(old.args[1])
        axis = get_op("nn.bias_add").normalize_attrs(new.attrs).axis
        if known is None or data is None or bias is None or axis not in (1, -3):
            return new
        added = Call(Op("add"), (known.tensor, _per_channel(new.args[1], known)))
        return self._back(replace(known, tensor=added))

    def _batch_norm(self, old: TupleGetItem, new: TupleGetItem) -> Expr:
        """Field 0 of an inference `nn.batch_norm` over the channels of a blocked tensor (a
        pre-activation BN, DenseNet's, that no conv before it absorbed): the blocked tensor
        times gamma / sqrt(var + eps), plus beta - mean * that, each a per-channel vector laid
        out as the blocks (FoldConstant computes them for constant statistics), as onnxruntime
        turns such a BN into a blocked 1x1 depthwise conv. The added channels get 0 and 0."""
        norm = new.tuple_value
        if new.index != 0 or not isinstance(norm, Call) or not isinstance(norm.op, Op):
            return new
        if norm.op.name != "nn.batch_norm" or not isinstance(old.tuple_value, Call):
            return new
        known = self.blocked.get(id(norm.args[0]))
        types = [_tensor(a) for a in old.tuple_value.args]
        if known is None or None in types or types[0].ndim != 4:  # type: ignore[union-attr]
            return new
        if any(ty.dtype != "float32" for ty in types):  # type: ignore[union-attr]
            return new
        attrs = get_op("nn.batch_norm").normalize_attrs(norm.attrs)
        if attrs.axis % 4 != 1:
            return new
        gamma, beta, mean, var = norm.args[1:]
        epsilon = Constant(np.float32(attrs.epsilon))
        scale: Expr = Call(Op("rsqrt"), (Call(Op("add"), (var, epsilon)),))
        if attrs.scale:
            scale = Call(Op("multiply"), (gamma, scale))
        shift: Expr = Call(Op("negative"), (Call(Op("multiply"), (mean, scale)),))
        if attrs.center:
            shift = Call(Op("subtract"), (beta, Call(Op("multiply"), (mean, scale))))
        scaled = Call(Op("multiply"), (known.tensor, _per_channel(scale, known)))
        shifted = Call(Op("add"), (scaled, _per_channel(shift, known)))
        return self._back(replace(known, tensor=shifted))

    def _binary(self, old: Call, new: Call) -> Expr:
        types = [_tensor(a) for a in old.args]
        known = [self.blocked.get(id(a)) for a in new.args]
        if len(types) != 2 or None in types or not any(known):
            return new
        first, second = types
        assert first is not None
        assert second is not None
        # The blocks of the larger operand: an SE block's scale (N, C, 1, 1) is transformed
        # to the map's blocks, not the map to the scale's (torchvision writes `scale * x`).
        sizes = [_elements(ty) if k is not None else -1 for k, ty in zip(known, types, strict=True)]
        lead = known[sizes.index(max(sizes))]
        assert lead is not None
        if first.dtype != second.dtype:
            return new
        if lead.padded > lead.channels and new.op.name not in _PADDED_SAFE:
            return new  # 0 / 0 in the added channels: work on the NCHW tensors
        scalar = [all(d == 1 for d in ty.shape) and ty.ndim <= 4 for ty in (first, second)]
        if known.count(None) == 1 and scalar[known.index(None)]:
            # A blocked tensor and a single value (hardsigmoid's `x * a + b`): the value
            # broadcasts over any layout, as it is.
            pairs = zip(known, new.args, strict=True)
            args = tuple(k.tensor if k is not None else arg for k, arg in pairs)
            return self._back(replace(lead, tensor=Call(new.op, args, new.attrs)))
        if first.ndim != 4 or second.ndim != 4:
            return new
        # One shape, or a per-channel operand broadcast over the map (an SE block's scale,
        # (N, C, 1, 1)): the blocked operands broadcast alike.
        if first.shape[:2] != second.shape[:2] or not all(
            a == b or 1 in (a, b) for a, b in zip(first.shape[2:], second.shape[2:], strict=True)
        ):
            return new
        args = tuple(
            self._as_blocked(arg, lead.block, lead.padded, ty.shape)  # type: ignore[union-attr]
            for arg, ty in zip(new.args, types, strict=True)
        )
        return self._back(replace(lead, tensor=Call(new.op, args, new.attrs)))

    def _pool(self, new: Call) -> Expr:
        known = self.blocked.get(id(new.args[0]))
        attrs = get_op(new.op.name).normalize_attrs(new.attrs)  # type: ignore[union-attr]  # an Op
        if known is None or attrs.layout != "NCHW" or attrs.out_layout:
            return new
        pooled = Call(new.op, (known.tensor,), {**new.attrs, "layout": f"NCHW{known.block}c"})
        return self._back(replace(known, tensor=pooled))

    def _spatial_reduction(self, old: Call, new: Call) -> Expr:
        """A mean (sum, max, min) over H and W of a blocked tensor with the dimensions kept,
        as timm's squeeze-and-excitation writes its squeeze (`x.mean((2, 3), keepdim=True)`):
        the same reduction over the blocked H and W, so the SE block's convs and its scale
        multiply stay blocked (EfficientNet's SE blocks had transformed each map to NCHW and
        back)."""
        known = self.blocked.get(id(new.args[0]))
        data = _tensor(old.args[0])
        if known is None or data is None or data.ndim != 4:
            return new
        attrs = get_op(new.op.name).normalize_attrs(new.attrs)  # type: ignore[union-attr]
        if not attrs.keepdims or reduced_axes(attrs, data.ndim) != (2, 3):
            return new
        # The axes as they are in the blocked tensor too (H and W stay 2 and 3).
        attributes = {name: v for name, v in new.attrs.items() if name != "exclude"}
        attributes["axis"] = (2, 3)
        reduced = Call(new.op, (known.tensor,), attributes)
        return self._back(replace(known, tensor=reduced))

    def _unary(self, new: Call) -> Expr:
        known = self.blocked.get(id(new.args[0]))
        if known is None:
            return new
        if known.padded > known.channels and new.op.name not in _PADDED_SAFE:
            return new  # log(0), 1 / 0 in the added channels: work on the NCHW tensor
        return self._back(replace(known, tensor=Call(new.op, (known.tensor,), new.attrs)))

    def _concatenate(self, old: Call, new: Call) -> Expr:
        """Channels joined in the blocked layout, so the next convolution reads the result
        blocked and the memory plan can have each input written into its slice (no copy);
        the block is the smallest of the blocked inputs', and it must divide every input.
        Where the concatenation is the one reader of its inputs (an Inception block's
        branches), or where every reader of the join takes the blocked layout (a conv, a pool,
        a batch norm: DenseNet's layers join every earlier feature map again, then normalize
        the join). A join of shared inputs read in NCHW stays in NCHW: there the transform
        back of each input, made once and shared by all the joins, is cheaper than a blocked
        join followed by a transform back of the whole at each layer (DenseNet-121 before its
        batch norms were blocked: 61.9 ms against 71.6 at one thread, full size)."""
        (fields,) = new.args
        out = _tensor(old)
        axis = get_op("concatenate").normalize_attrs(new.attrs).axis
        if not isinstance(fields, Tuple) or out is None or out.ndim != 4 or axis not in (1, -3):
            return new
        (old_fields,) = old.args
        if not isinstance(old_fields, Tuple) or self.uses(old_fields) != 1:
            return new
        shared = any(self.uses(f) != 1 for f in old_fields.fields)
        if shared and not all(_reads_blocked(r) for r in self.readers(old)):
            return new
        known = [self.blocked.get(id(f)) for f in fields.fields]
        shapes = [_tensor(f) for f in old.args[0].fields] if isinstance(old.args[0], Tuple) else []
        if not any(known) or len(shapes) != len(known) or None in shapes:
            return new
        if any(k is not None and k.padded != k.channels for k in known):
            return new  # added channels would sit between the inputs' channels
        block = min(k.block for k in known if k is not None)
        if any(ty is None or ty.dtype != "float32" or ty.shape[1] % block for ty in shapes):
            return new
        blocked = tuple(
            self._as_blocked(f, block, ty.shape[1], ty.shape)  # type: ignore[union-attr]
            for f, ty in zip(fields.fields, shapes, strict=True)
        )
        joined = Call(new.op, (Tuple(blocked),), new.attrs)
        return self._back(_Blocked(joined, block, out.shape[1], out.shape[1]))


@dataclass(frozen=True)
class AlterOpLayout(Pass):
    """Rewrite NCHW convolutions to channel-blocked NCHW[x]c ones, the blocks sized by
    `target`'s float32 lanes (this machine's when None), carrying the blocked layout through
    elementwise operators, bias_add, residual adds, squeeze-and-excitation blocks and pooling to
    the next convolution."""

    name: ClassVar[str] = "alter_op_layout"
    target: Target | None = field(default=None)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        lanes = max(1, self._target().vector_bytes // 4)
        return rewrite_functions(mod, lambda _, func: _Blocker(lanes, func).rewrite(func))

    def _target(self) -> Target:
        # This machine when no target is given: what compile() builds for.
        return self.target if self.target is not None else host_target()


__all__ = ["AlterOpLayout", "channel_block"]
