"""Regressions of C names (issue 12): a function spelled like a typedef, function or variable
the prelude's headers declare (`float_t`, `double_t` of math.h) is renamed, so it compiles."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from tessel.codegen.c_names import RESERVED_NAMES
from tessel.codegen.c_prelude import PRELUDE
from tessel.driver import build
from tessel.ir import builders as B
from tessel.ir.expr import Var
from tessel.runtime import BuildError, find_compiler
from tessel.support.names import C_KEYWORDS, c_identifier
from tessel.testing.ir_programs import prim_func, store
from tessel.tir.buffer import decl_buffer
from tessel.tir.stmt import For, ForKind


@pytest.mark.parametrize("name", ["float_t", "double_t", "div_t", "intmax_t", "random"])
def test_function_named_like_a_header_declaration_compiles_and_runs(name):
    a_buf, i = decl_buffer((4,), "int32", "A"), Var("i")
    loop = For(i, B.const(0), B.const(4), ForKind.SERIAL, store(a_buf, (i,), i * 2))
    module = build(prim_func(name, (a_buf,), loop))
    a = np.zeros(4, "int32")
    module[name](a)
    np.testing.assert_array_equal(a, [0, 2, 4, 6])


_TOKEN = re.compile(r"[A-Za-z_]\w*|\S")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _without_attributes(tokens: list[str]) -> list[str]:
    """`tokens` without `__attribute__ ((...))` and `__asm__ (...)` groups."""
    out, k = [], 0
    while k < len(tokens):
        if tokens[k] in ("__attribute__", "__asm__", "__asm") and tokens[k + 1 : k + 2] == ["("]:
            depth, k = 0, k + 1
            while True:
                depth += {"(": 1, ")": -1}.get(tokens[k], 0)
                k += 1
                if depth == 0:
                    break
            continue
        out.append(tokens[k])
        k += 1
    return out


def _declared_name(tokens: list[str]) -> str | None:
    """The name a file-scope declaration (without its braces' contents) declares."""
    tokens = _without_attributes(tokens)
    if tokens[:1] == ["typedef"] and "(" in tokens and tokens[tokens.index("(") + 1] == "*":
        return tokens[tokens.index("(") + 2]  # typedef R (*name)(...)
    for a, b in zip(tokens, tokens[1:], strict=False):
        if b == "(" and _IDENTIFIER.fullmatch(a) and a != "__typeof__":
            return a  # a function (a typedef of a function type never occurs here)
    tokens = tokens[: tokens.index("=")] if "=" in tokens else tokens
    tokens = tokens[: tokens.index("[")] if "[" in tokens else tokens
    names = [t for t in tokens if _IDENTIFIER.fullmatch(t)]
    return names[-1] if len(names) >= 2 else None


def _header_declarations(*flags: str) -> set[str]:
    """The names the prelude's headers declare at file scope (from the preprocessed prelude)."""
    result = subprocess.run(
        [*find_compiler(), *flags, "-E", "-P", "-x", "c", "-"],
        input=PRELUDE,
        capture_output=True,
        text=True,
        check=True,
    )
    names, depth, statement = set(), 0, []
    for token in _TOKEN.findall(result.stdout):
        depth += {"{": 1, "}": -1}.get(token, 0)
        if token == "}" and depth == 0 and statement[:1] != ["typedef"] and "(" in statement:
            names.add(_declared_name(statement))  # a function definition (inline)
            statement = []
        elif depth == 0 and token == ";":
            names.add(_declared_name(statement))
            statement = []
        elif depth == 0 and token != "}":
            statement.append(token)
    return {n for n in names if n is not None}


@pytest.mark.parametrize("flags", [("-std=c11",), ("-std=gnu11",)])
def test_every_name_the_prelude_headers_declare_is_reserved(flags):
    try:
        declared = _header_declarations(*flags)
    except (OSError, subprocess.CalledProcessError, BuildError) as err:
        pytest.skip(f"no usable C compiler: {err}")
    assert {"float_t", "double_t", "malloc", "int32_t"} <= declared  # the parse finds them
    user_visible = {n for n in declared if c_identifier(n) == n}  # `__x` and `_X` get prefixed
    assert user_visible - RESERVED_NAMES - C_KEYWORDS == set()
