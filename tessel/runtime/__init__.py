"""Runtime: C compiler driver and cache, and loaded modules of checked callables.

Needs only tessel.support and NumPy, so deployed code needs nothing of the compiler:
`load_model(directory)` runs a model that `CompiledModel.export` wrote (tessel.runtime.exported).
"""

from tessel.runtime.artifact_cache import default_cache_dir, read_artifact, write_artifact
from tessel.runtime.compiler import compile_source, compile_units, find_compiler
from tessel.runtime.errors import BuildError, RuntimeCallError
from tessel.runtime.exported import ExportedModel, TensorSpec, load_model
from tessel.runtime.module import BoundFunction, Function, Module
from tessel.support.abi import ConstantSpec, DataFile, FunctionSignature, ParamSpec

__all__ = [
    "BoundFunction",
    "BuildError",
    "ConstantSpec",
    "DataFile",
    "ExportedModel",
    "Function",
    "FunctionSignature",
    "Module",
    "ParamSpec",
    "RuntimeCallError",
    "TensorSpec",
    "compile_source",
    "compile_units",
    "default_cache_dir",
    "find_compiler",
    "load_model",
    "read_artifact",
    "write_artifact",
]
