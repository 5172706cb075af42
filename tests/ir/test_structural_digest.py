"""structural_digest: the exact, process-independent digest that keys Tessel's caches. Equal
programs with equal names digest equally; names, meaning and which variables are the same one
all change it; values with no exact digest are refused."""

import pickle
import subprocess
import sys

import numpy as np
import pytest
from test_structural import MEANINGFUL_CHANGES, _scale_func

from tessel.ir import builders
from tessel.ir.expr import Add, Var
from tessel.ir.structural import structural_digest, structural_hash
from tessel.script import parse
from tessel.support.dtype import float32
from tessel.tir import builtin
from tessel.tir.stmt import AllocateConst, Evaluate, SeqStmt


def test_equal_programs_with_equal_names_digest_equally():
    assert structural_digest(_scale_func()) == structural_digest(_scale_func())
    func = _scale_func()
    assert structural_digest(parse(func.script())) == structural_digest(parse(func.script()))


@pytest.mark.parametrize(
    "changes",
    [*MEANINGFUL_CHANGES.values(), {"names": ("X", "Y", "k", "vk")}],
    ids=[*MEANINGFUL_CHANGES.keys(), "names"],
)
def test_meaning_and_names_change_the_digest(changes):
    assert structural_digest(_scale_func()) != structural_digest(_scale_func(**changes))


def test_renamed_program_hashes_equal_but_digests_differ():
    renamed = _scale_func(names=("X", "Y", "k", "vk"))
    assert structural_hash(renamed) == structural_hash(_scale_func())
    assert structural_digest(renamed) != structural_digest(_scale_func())


def test_one_variable_and_two_of_one_name_digest_differently():
    x = Var("x")
    assert structural_digest(Add(x, x)) != structural_digest(Add(Var("x"), Var("x")))


def test_statement_nesting_that_prints_alike_digests_differently():
    a, b, c = (Evaluate(Var(name)) for name in "abc")
    nested, flat = SeqStmt((SeqStmt((a, b)), c)), SeqStmt((a, b, c))
    assert structural_digest(nested) != structural_digest(flat)


def test_constant_bytes_are_part_of_the_digest():
    def allocation(data):
        values = np.asarray(data, "float32")
        extents = (builders.const(4),)
        return AllocateConst(Var("w", "handle"), float32, extents, values, None, Evaluate(0))

    same = structural_digest(allocation([1, 2, 3, 4]))
    assert structural_digest(allocation([1, 2, 3, 4])) == same
    assert structural_digest(allocation([1, 2, 3, 5])) != same


def test_digest_is_the_same_in_another_process():
    code = (
        "import sys; sys.path.insert(0, 'tests/ir'); from test_structural import _scale_func;"
        "from tessel.ir.structural import structural_digest;"
        "print(structural_digest(_scale_func()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == structural_digest(_scale_func())


def test_value_without_an_exact_digest_is_refused():
    with pytest.raises(TypeError, match="no structural digest of a object"):
        structural_digest({"note": object()})


def test_builtin_op_read_back_from_a_pickle_is_the_same_op():
    # Kernels are cached as pickles, and passes compare builtin ops by identity.
    assert pickle.loads(pickle.dumps(builtin.if_then_else_op)) is builtin.if_then_else_op
    call = builtin.if_then_else(Var("c", "bool"), builders.const(1.0), builders.const(0.0))
    assert pickle.loads(pickle.dumps(call)).op is builtin.if_then_else_op
