"""Code generation: lowered TensorIR to C text, with plain entry signatures for the runtime."""

from tessel.codegen.c_source import CSource, generate
from tessel.codegen.errors import CodegenError
from tessel.support.abi import FunctionSignature, ParamSpec

__all__ = ["CSource", "CodegenError", "FunctionSignature", "ParamSpec", "generate"]
