"""Malformed scripts: each gives a ParseError at the offending node, never a raw exception."""

import pytest

from tessel.ir.expr import Add
from tessel.ir.functor import post_order
from tessel.script import parse
from tessel.script.errors import ParseError
from tessel.script.parser import operators
from tessel.support.errors import InternalError
from tessel.testing.parse_errors import expect_parse_error


def _column(err: ParseError) -> int:
    return err.span.column


def test_float_extent_in_grid_is_reported_at_the_literal():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in T.grid(2.5):  # error: T.grid expects integer extents
                A[i] = T.float32(0)
    """)
    assert _column(err) == 21
    assert "got the float literal 2.5" in err.message
    assert err.hint == "extents must be int32 or int64 expressions"


def test_float_bound_in_range_is_reported_at_the_argument():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(0, 4.0):  # error: range expects integer bounds
                A[i] = T.float32(0)
    """)
    assert _column(err) == 23


def test_undefined_name_suggests_a_close_one():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for row in range(4):
                A[row] = A[rwo] + 1.0  # error: name `rwo` is not defined
    """)
    assert _column(err) == 20
    assert err.hint is not None and "`row`" in err.hint


def test_unknown_t_attribute_names_the_attribute():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in T.serail(4):  # error: `T` has no attribute `serail`
                A[i] = T.float32(0)
    """)
    assert _column(err) == 14
    assert "T.serial" in err.hint


def test_grid_without_extents():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in T.grid():  # error: T.grid expects at least one extent
                A[i] = T.float32(0)
    """)
    assert _column(err) == 14


def test_remap_kinds_and_vars_count_differ():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4, 4), "float32")):
            for i, j in T.grid(4, 4):
                with T.block("B"):
                    vi, vj = T.axis.remap("S", [i, j])  # error: got 1 kinds ('S') but 2 loop vars
                    A[vi, vj] = T.float32(0)
    """)
    assert _column(err) == 40  # the list of loop vars


def test_unknown_block_axis_kind_letter():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4, 4), "float32")):
            for i, j in T.grid(4, 4):
                with T.block("B"):
                    vi, vj = T.axis.remap("SQ", [i, j])  # error: unknown block axis kind 'Q'
                    A[vi, vj] = T.float32(0)
    """)
    assert _column(err) == 35
    assert '"S"' in err.hint


def test_bad_dtype_string_points_at_the_dtype():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "flaot32")):  # error: unknown data type 'flaot32'
            for i in range(4):
                A[i] = T.float32(0)
    """)
    assert _column(err) == 25


def test_rank_mismatch_on_load():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                B[i] = A[i]  # error: load from `A` uses 1 indices, but the buffer has 2 dimensions
    """)
    assert _column(err) == 16


def test_rank_mismatch_on_store():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4, 4), "float32")):
            for i in range(4):
                A[i] = T.float32(0)  # error: uses 1 indices, but the buffer has 2 dimensions
    """)
    assert _column(err) == 9


# Storing an int expression into a float buffer casts it, as TVM's IR builder does (issue 12):
# see tests/script/test_builtins_tvm_forms.py::test_store_casts_value_to_buffer_dtype.


def test_storing_fractional_float_into_int_buffer():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            for i in range(4):
                A[i] = 1.5  # error: cannot make an int32 constant from the float 1.5
    """)
    assert _column(err) == 16


def test_non_integer_index():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), x: T.float32):
            A[x] = T.float32(0)  # error: has a non-integer index
    """)
    assert _column(err) == 5


@pytest.mark.parametrize(
    ("statement", "what"),
    [
        (["try:", "    pass", "except Exception:", "    pass"], "`try` statements"),
        (["class Inner:", "    pass"], "class definitions"),
        (["import math"], "`import` statements"),
        (["def helper():", "    pass"], "nested function definitions"),
        (["return"], "`return`"),
    ],
)
def test_unsupported_statements(statement, what):
    first = statement[0] + f"  # error: {what}"
    body = "\n".join("    " + line for line in [first, *statement[1:]])
    err = expect_parse_error(
        '@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = T.float32(0)\n' + body
    )
    assert _column(err) == 5
    assert "not supported in TVMScript" in err.message


def test_lambda_expression_is_unsupported():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            g = lambda x: x  # error: a lambda is not supported in TVMScript
    """)
    assert _column(err) == 9


def test_reads_outside_a_block():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.reads(A[0:4])  # error: T.reads is only allowed directly inside a block
            A[0] = T.float32(0)
    """)
    assert _column(err) == 5


def test_reads_inside_a_loop_inside_a_block():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            with T.block("B"):
                for i in range(4):
                    T.writes(A[i])  # error: T.writes is only allowed directly inside a block
                    A[i] = T.float32(0)
    """)
    assert _column(err) == 13


def test_init_outside_a_block():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.init():  # error: T.init() is only allowed directly inside a block
                    A[i] = T.float32(0)
    """)
    assert _column(err) == 14


def test_axis_outside_a_block():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                vi = T.axis.spatial(4, i)  # error: T.axis is only allowed directly inside a block
                A[vi] = T.float32(0)
    """)
    assert _column(err) == 14


def test_remap_of_a_non_loop_variable():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), n: T.int32):
            for i in range(4):
                with T.block("B"):
                    vi = T.axis.remap("S", [n])  # error: T.axis.remap binds loop variables only
                    A[vi] = T.float32(0)
    """)
    assert _column(err) == 18


def test_duplicate_parameter():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"),
              A: T.Buffer((4,), "float32")):  # error: duplicate parameter `A`
            A[0] = T.float32(0)
    """)
    assert _column(err) == 7


def test_parameter_without_annotation():
    err = expect_parse_error("""
        @T.prim_func
        def f(A):  # error: parameter `A` needs a type annotation
            pass
    """)
    assert _column(err) == 7


def test_return_annotation_must_be_a_type():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")) -> "nothing":  # error: returns None or a type
            A[0] = T.float32(0)
    """)
    assert _column(err) == 40


def test_assigning_a_scalar_to_a_buffer_name():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A = T.float32(1)  # error: cannot assign to buffer `A` as a scalar
    """)
    assert _column(err) == 5
    assert err.hint == "write `A[...] = value` to store into it"


def test_loop_over_a_plain_list():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in [1, 2]:  # error: a for loop iterates over T.grid
                A[i] = T.float32(0)
    """)
    assert _column(err) == 14


def test_grid_binds_wrong_number_of_names():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4, 4), "float32")):
            for i, j in T.grid(4, 4, 4):  # error: so the loop must bind 3 names
                A[i, j] = T.float32(0)
    """)
    assert _column(err) == 9


def test_wrong_arity_of_a_t_helper_is_a_parse_error():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A[0] = T.max(A[1])  # error: missing 1 required positional argument
    """)
    assert _column(err) == 12


def test_math_on_integer_is_a_dtype_error():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            A[0] = T.exp(A[1])  # error: T.exp needs a float argument
    """)
    assert _column(err) == 12


def test_constant_out_of_range():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "uint8")):
            A[0] = T.uint8(300)  # error: 300 does not fit in uint8
    """)
    assert _column(err) == 12


def test_two_inits_in_one_block():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            with T.block("B"):
                with T.init():
                    A[0] = T.float32(0)
                with T.init():  # error: a block has at most one T.init()
                    A[0] = T.float32(0)
    """)
    assert _column(err) == 14


def test_annotated_let_with_wrong_dtype():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            x: T.int32 = T.float32(1)  # error: `x` is declared int32 but the value is float32
            A[0] = T.float32(0)
    """)
    assert _column(err) == 18


def test_if_condition_must_be_bool():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                if i:  # error: if needs a scalar bool condition
                    A[i] = T.float32(0)
    """)
    assert _column(err) == 12


def test_match_buffer_of_a_non_handle():
    err = expect_parse_error("""
        @T.prim_func
        def f(n: T.int32):
            A = T.match_buffer(n, (4,), "float32")  # error: `n` is not a handle parameter
            A[0] = T.float32(0)
    """)
    assert _column(err) == 9


def test_syntax_error_is_a_parse_error():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A[0] = = 1  # error: invalid Python syntax
    """)
    assert err.span.line == 4


def test_missing_decorator():
    err = expect_parse_error("""
        def f(A: T.Buffer((4,), "float32")):  # error: must be decorated with @T.prim_func
            A[0] = T.float32(0)
    """)
    assert _column(err) == 1


def test_rendering_has_location_source_line_carets_and_hint():
    with pytest.raises(ParseError) as info:
        parse('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = B[0]\n', "k.py")
    lines = str(info.value).splitlines()
    assert lines[0] == "k.py:3:12: error: name `B` is not defined"
    assert lines[1] == "    A[0] = B[0]"
    assert lines[2] == "           ^"
    assert info.value.__cause__ is None or isinstance(info.value.__cause__, Exception)


def test_build_errors_keep_their_cause():
    with pytest.raises(ParseError) as info:
        parse('@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n    A[0] = 1 + A[0, 1]\n')
    assert info.value.__cause__ is not None
    assert info.value.span.column == 16


def test_global_symbol_that_is_not_a_string():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.func_attr({"global_symbol": 3})  # error: `global_symbol` must be a string
            A[0] = T.float32(0)
    """)
    assert "got 3" in err.message


@pytest.mark.parametrize("name", ['"return"', '"é"', "3", '"a b"', '"1f"'])
def test_call_extern_name_must_be_a_c_identifier(name):
    err = expect_parse_error(f"""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.evaluate(T.call_extern("int32", {name}, A[0]))  # error: needs the name of a C function
    """)
    assert _column(err) == 39  # at the name argument


def test_assert_message_must_be_a_string():
    err = expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            assert A[0] == 1, 3  # error: an assert message must be a string
    """)
    assert _column(err) == 23


def test_unsupported_operator_is_a_parse_error():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            A[0] = A[1] @ A[2]  # error: the operator `MatMult` is not supported
    """)


def test_subscript_of_a_python_value_out_of_range():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            A[0] = A.shape[5]  # error: `A.shape[5]` fails: tuple index out of range
    """)


def _long_sum(terms: int, term: str = "A[1]") -> str:
    return "+".join([term] * terms)


def test_long_sum_parses_without_recursion():
    func = parse(
        f'@T.prim_func\ndef f(A: T.Buffer((4,), "int32")):\n    A[0] = {_long_sum(2000)}\n'
    )
    adds = [n for n in post_order(func.body) if isinstance(n, Add)]
    assert len(adds) == 1999


def test_error_deep_in_a_long_sum_is_reported_at_its_operator():
    terms = _long_sum(700) + ' + "x" + ' + _long_sum(700)
    err = expect_parse_error(f"""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            A[0] = {terms}  # error: x
    """)
    assert _column(err) == 12
    assert err.span.end_column == 12 + len(_long_sum(700) + ' + "x"')  # the link adding "x"


def test_expression_too_deep_for_the_evaluator_is_a_parse_error_at_the_statement():
    nested = "-" * 2000 + "A[1]"
    err = expect_parse_error(f"""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            A[2] = A[1]
            A[0] = {nested}  # error: nested too deeply
    """)
    assert _column(err) == 5
    assert err.message.startswith("this statement is nested too deeply")
    assert isinstance(err.__cause__, RecursionError)
    assert err.hint is not None and "split" in err.hint


def test_expression_too_deep_for_python_s_parser_is_a_parse_error_on_its_line():
    err = expect_parse_error(f"""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            A[2] = A[1]
            A[0] = {_long_sum(20000)}  # error: nested too deeply
    """)
    assert _column(err) == 5
    assert "for Python's parser" in err.message


@pytest.mark.parametrize("bug", [AttributeError, KeyError, IndexError])
def test_internal_errors_are_not_disguised_as_parse_errors(monkeypatch, bug):
    def broken(op, value):
        raise bug("a bug")

    monkeypatch.setattr(operators, "apply_unary", broken)
    with pytest.raises(
        InternalError, match=rf"<string>:3:12: {bug.__name__} while parsing `-A\[1\]`"
    ):
        parse('@T.prim_func\ndef f(A: T.Buffer((4,), "int32")):\n    A[0] = -A[1]\n')
