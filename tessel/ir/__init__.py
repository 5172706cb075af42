"""Nodes, scalar expressions, structural equality, visitors, modules, passes and targets."""

from tessel.ir import builders
from tessel.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    GlobalVar,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Op,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Select,
    SizeVar,
    StringImm,
    Sub,
    Var,
)
from tessel.ir.functor import Mutator, Visitor, post_order
from tessel.ir.module import IRModule
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import assert_structural_equal, structural_equal, structural_hash
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext, PassInstrument, PassTimingInstrument, PrintAfterAll, Sequential
from tessel.ir.type import PointerType
from tessel.ir.virtual_device import VirtualDevice

__all__ = [
    "EQ", "GE", "GT", "LE", "LT", "NE", "Add", "And", "BinaryOp", "Broadcast", "Call", "Cast",
    "CmpOp", "Div", "FloatImm", "FloorDiv", "FloorMod", "GlobalVar", "IRModule", "IntImm", "Let",
    "Max", "Min", "Mod", "Mul", "Mutator", "Node", "Not", "Op", "Or", "Pass", "PassContext",
    "PassInstrument", "PassTimingInstrument", "PointerType", "PrimExpr", "PrintAfterAll", "Ramp",
    "Range", "Select", "Sequential", "SizeVar", "StringImm", "Sub", "Target", "Var",
    "VirtualDevice", "Visitor",
    "assert_structural_equal", "builders", "post_order", "structural_equal", "structural_hash",
    "with_changes",
]
