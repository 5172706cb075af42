"""The reference interpreter: runs any PrimFunc (block-level or lowered) with exact NumPy
semantics. It is the oracle of the test suite: it refuses what C leaves undefined
(out-of-bounds accesses, integer division by zero, T.undef() used as a value, ...).

    run(func_or_mod, *args, name=None, constants=None)  # arrays are written in place
    compile_prim_func(func)(*args, constants=None)      # compile once, call many times
"""

from tessel.tir.interpreter.errors import UNDEF, InterpreterError, Poison
from tessel.tir.interpreter.run import CompiledFunction, compile_prim_func, run

__all__ = ["UNDEF", "CompiledFunction", "InterpreterError", "Poison", "compile_prim_func", "run"]
