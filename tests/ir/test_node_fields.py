"""node_fields: the fields IR walks read are all that may hold a node, on real lowered IR."""

import dataclasses

from tessel import te, topi
from tessel.ir.functor import post_order
from tessel.ir.node import Node, field_names, node_fields
from tessel.ir.transform import PassInstrument
from tessel.schedule.rules.default import default_schedule
from tessel.support.frozen_map import FrozenMap
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import For
from tessel.transform.pipeline import lower


def _holds_a_node(value: object) -> bool:
    if isinstance(value, Node):
        return True
    if isinstance(value, tuple | list):
        return any(_holds_a_node(v) for v in value)
    if isinstance(value, FrozenMap):
        return any(_holds_a_node(k) or _holds_a_node(v) for k, v in value.items())
    return False


class _EveryModule(PassInstrument):
    def __init__(self) -> None:
        self.modules = []

    def after_pass(self, pass_, mod) -> None:
        self.modules.append(mod)


def _lowered_conv_stages():
    data = te.placeholder((1, 8, 10, 10), name="data")
    weight = te.placeholder((16, 8, 3, 3), name="weight")
    conv = topi.nn.relu(topi.nn.conv2d_nchw(data, weight, 1, 1, 1))
    func = te.create_prim_func([data, weight, conv])
    record = _EveryModule()
    lower(default_schedule(func).mod, instruments=[record])
    return record.modules


def test_fields_skipped_by_walks_hold_no_node_at_any_stage_of_lowering():
    modules = _lowered_conv_stages()
    assert len(modules) > 10
    checked = set()
    for mod in modules:
        for func in mod.functions.values():
            for node in post_order(func):
                cls = type(node)
                for name in set(field_names(cls)) - set(node_fields(cls)):
                    assert not _holds_a_node(getattr(node, name)), (cls.__name__, name)
                checked.add(cls)
    assert {For, BufferLoad} <= checked


def test_node_fields_drop_scalars_and_keep_possible_nodes():
    assert node_fields(For) == ("loop_var", "min", "extent", "body", "annotations")
    assert node_fields(BufferLoad) == ("buffer", "indices", "predicate")
    declared = {f.name: f.type for f in dataclasses.fields(For)}
    assert declared["kind"] == "ForKind" and "kind" not in node_fields(For)
