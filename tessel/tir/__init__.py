"""TensorIR: buffers, statements, blocks, PrimFunc, builtins, verification and the interpreter."""

from tessel.tir import builtin
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType, MatchBufferRegion
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion, decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.index_map import IndexMap, IndexMapError
from tessel.tir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)

__all__ = [
    "Allocate",
    "AllocateConst",
    "AssertStmt",
    "AttrStmt",
    "Block",
    "BlockRealize",
    "Buffer",
    "BufferLoad",
    "BufferRegion",
    "BufferStore",
    "DeclBuffer",
    "Evaluate",
    "For",
    "ForKind",
    "IfThenElse",
    "IndexMap",
    "IndexMapError",
    "IterVar",
    "IterVarType",
    "LetStmt",
    "MatchBufferRegion",
    "PrimFunc",
    "SeqStmt",
    "Stmt",
    "While",
    "builtin",
    "decl_buffer",
]
