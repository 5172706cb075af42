"""Cases (graph_op_cases.Case) for on_device and device_copy (tessel/graph/op/device.py)."""

from __future__ import annotations

from graph_op_cases import Case, T

from tessel.graph import TupleType
from tessel.ir import VirtualDevice

CPU, GPU = VirtualDevice("cpu", 0), VirtualDevice("cuda", 0)


def device_cases() -> list[Case]:
    """Each operator on a tensor and a tuple; a bad call gives a device attribute a string.
    on_device is an annotation that refuses to lower (`lowers=False`)."""
    pair = TupleType((T(2, 3), T(4, dtype="int32")))
    copy = {"src_virtual_device": CPU, "dst_virtual_device": GPU}
    return [
        Case(
            "on_device",
            (T(2, 3),),
            {"virtual_device": GPU, "constrain_result": True},
            T(2, 3),
            ((pair,), {"virtual_device": CPU, "constrain_body": False}),
            ((T(2, 3),), {"virtual_device": "cuda"}, "virtual_device"),
            lowers=False,
        ),
        Case(
            "device_copy",
            (T(2, 3),),
            copy,
            T(2, 3),
            ((pair,), copy),
            (
                (T(2, 3),),
                {"src_virtual_device": CPU, "dst_virtual_device": 2},
                "dst_virtual_device",
            ),
        ),
    ]
