"""Runtime: C compiler driver and cache, and loaded modules of checked callables.

Needs only tessel.support and NumPy, so deployed code needs nothing of the compiler.
"""

from tessel.runtime.artifact_cache import default_cache_dir, read_artifact, write_artifact
from tessel.runtime.compiler import compile_source, find_compiler
from tessel.runtime.errors import BuildError, RuntimeCallError
from tessel.runtime.module import BoundFunction, Function, Module
from tessel.support.abi import ConstantSpec, DataFile, FunctionSignature, ParamSpec

__all__ = [
    "BoundFunction",
    "BuildError",
    "ConstantSpec",
    "DataFile",
    "Function",
    "FunctionSignature",
    "Module",
    "ParamSpec",
    "RuntimeCallError",
    "compile_source",
    "default_cache_dir",
    "find_compiler",
    "read_artifact",
    "write_artifact",
]
