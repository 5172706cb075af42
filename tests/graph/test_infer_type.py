"""InferType on programs built in Python: operators, let, if, tuples, closures, higher-order
functions, unannotated parameters, module functions (recursive too), and its errors."""

import pytest

from tessel.graph import (
    Call,
    Function,
    GlobalVar,
    If,
    IncompleteType,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    const,
)
from tessel.graph.op import OpTypeError, UnknownOperatorError
from tessel.graph.passes import InferType, TypeInferenceError
from tessel.graph.traversal import post_order_exprs
from tessel.graph.type_util import is_complete, type_str
from tessel.graph.verify import GraphVerifyError, verify_module, well_formed, well_typed
from tessel.ir.module import IRModule
from tessel.ir.transform import PassContext, Sequential
from tessel.support.span import Span


def T(*shape, dtype="float32"):
    return TensorType(shape, dtype)


def op(name, *args, **attrs):
    return Call(Op(name), args, attrs)


def infer(func, **functions):
    mod = IRModule.from_dict({"main": func, **functions})
    return InferType()(mod)


def main_type(func, **functions):
    return type_str(infer(func, **functions)["main"].checked_type)


def assert_fully_typed(mod):
    for _, func in mod.items():
        for expr in post_order_exprs(func):
            assert is_complete(expr.checked_type), f"{type(expr).__name__} untyped"


def test_mlp():
    x, w1, b1, w2 = Var("x", T(4, 8)), Var("w1", T(16, 8)), Var("b1", T(16)), Var("w2", T(3, 16))
    hidden = op("nn.relu", op("nn.bias_add", op("nn.dense", x, w1), b1, axis=-1))
    mod = infer(Function((x, w1, b1, w2), op("nn.softmax", op("nn.dense", hidden, w2))))
    assert type_str(mod["main"].checked_type).endswith("-> Tensor[(4, 3), float32]")
    assert_fully_typed(mod)
    well_typed(mod)


def test_every_expression_kind_gets_a_type():
    x = Var("x", T(2, 3))
    y = Var("y")
    pair = Tuple((x, op("exp", x)))
    body = Let(y, pair, If(const(True), TupleGetItem(y, 1), TupleGetItem(y, 0)))
    mod = infer(Function((x,), body))
    func = mod["main"]
    assert (
        type_str(func.body.var.checked_type) == "(Tensor[(2, 3), float32], Tensor[(2, 3), float32])"
    )
    assert type_str(func.body.body.checked_type) == "Tensor[(2, 3), float32]"
    assert type_str(func.body.body.cond.checked_type) == "Tensor[(), bool]"
    assert_fully_typed(mod)


def test_infer_type_is_idempotent_and_keeps_sharing():
    x = Var("x", T(3))
    shared = op("exp", x)
    func = Function((x,), op("add", shared, shared))
    mod = infer(func)
    again = InferType()(mod)
    assert again is mod
    body = mod["main"].body
    assert body.args[0] is body.args[1]
    assert mod["main"].params[0] is body.args[0].args[0]


def test_unannotated_parameter_of_a_closure_is_solved_from_its_call():
    x = Var("x", T(2, 2))
    g, z, f = Var("g"), Var("z"), Var("f")
    apply_twice = Function((g,), Call(g, (Call(g, (x,)),)))  # captures x
    body = Let(f, apply_twice, Call(f, (Function((z,), op("nn.relu", z)),)))
    mod = infer(Function((x,), body))
    assert type_str(mod["main"].body.var.checked_type) == (
        "fn (fn (Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32]"
    )
    assert_fully_typed(mod)


def test_unannotated_let_and_parameter_from_later_use():
    a = Var("a", T(5))
    p, h = Var("p"), Var("h")
    helper = Function((p,), op("multiply", p, p))
    mod = infer(Function((a,), Let(h, helper, op("sum", Call(h, (a,)), axis=[0]))))
    assert type_str(mod["main"].checked_type) == "fn (Tensor[(5,), float32]) -> Tensor[(), float32]"


def test_incomplete_type_annotation_is_solved():
    x = Var("x", IncompleteType())
    y = Var("y", T(2, 3))
    mod = infer(Function((y,), Let(x, op("tanh", y), op("add", x, y))))
    assert type_str(mod["main"].body.var.checked_type) == "Tensor[(2, 3), float32]"


def test_module_functions_and_recursion():
    # @count(%n, %acc) = if (%n > 0) { @count(%n - 1, %acc * 2) } else { %acc }
    n, acc = Var("n", T(dtype="int32")), Var("acc", T(2))
    count = GlobalVar("count")
    body = If(
        op("greater", n, const(0)),
        Call(count, (op("subtract", n, const(1)), op("multiply", acc, const(2.0)))),
        acc,
    )
    counter = Function((n, acc), body)
    x = Var("x", T(2))
    main = Function((x,), Call(count, (const(3), x)))
    mod = IRModule({count: counter, GlobalVar("main"): main})
    typed = InferType()(mod)
    assert type_str(typed["count"].checked_type) == (
        "fn (Tensor[(), int32], Tensor[(2,), float32]) -> Tensor[(2,), float32]"
    )
    assert type_str(typed["main"].body.checked_type) == "Tensor[(2,), float32]"


def test_global_function_passed_as_a_value():
    v = Var("v", T(3))
    double = GlobalVar("double")
    k, arg = Var("k"), Var("arg", T(3))
    mod = IRModule(
        {
            double: Function((v,), op("add", v, v)),
            GlobalVar("main"): Function((arg,), Call(Function((k,), Call(k, (arg,))), (double,))),
        }
    )
    typed = InferType()(mod)
    assert (
        type_str(typed["main"].checked_type)
        == "fn (Tensor[(3,), float32]) -> Tensor[(3,), float32]"
    )


def test_split_and_batch_norm_tuples():
    x = Var("x", T(2, 6, 4, 4))
    params = [Var(name, T(6)) for name in ("g", "b", "m", "v")]
    bn = op("nn.batch_norm", x, *params)
    parts = op("split", TupleGetItem(bn, 0), indices_or_sections=3, axis=1)
    out = op("concatenate", Tuple((TupleGetItem(parts, 2), TupleGetItem(parts, 0))), axis=1)
    mod = infer(Function((x, *params), out))
    assert type_str(mod["main"].body.checked_type) == "Tensor[(2, 4, 4, 4), float32]"


def test_operator_error_names_operator_argument_and_span():
    span = Span("model.relay", 3, 7, 3, 12)
    x, w = Var("x", T(2, 4)), Var("w", T(5, 3))
    with pytest.raises(OpTypeError) as info:
        infer(Function((x, w), Call(Op("nn.dense"), (x, w), span=span)))
    assert "nn.dense: argument `weight` has 3 input features but `data` has 4" in str(info.value)
    assert info.value.span is span
    assert str(info.value).startswith("model.relay:3:7: ")


def test_operator_error_inside_a_closure_after_unification():
    x = Var("x", T(2, 4))
    g, f = Var("g"), Var("f")
    bad = Function((g,), op("nn.dense", g, const([[1.0, 2.0]])))
    with pytest.raises(OpTypeError, match="nn.dense: argument `weight` has 2 input features"):
        infer(Function((x,), Let(f, bad, Call(f, (x,)))))


def test_function_call_argument_mismatch_names_the_parameter():
    v = Var("v", T(3))
    helper = GlobalVar("helper")
    x = Var("x", T(4))
    mod = IRModule(
        {helper: Function((v,), v), GlobalVar("main"): Function((x,), Call(helper, (x,)))}
    )
    with pytest.raises(
        TypeInferenceError,
        match=r"call of @helper: argument `%v` has type "
        r"Tensor\[\(4,\), float32\] but the function expects Tensor\[\(3,\), float32\]",
    ):
        InferType()(mod)


def test_arity_and_non_function_calls():
    x = Var("x", T(3))
    f = Var("f")
    with pytest.raises(TypeInferenceError, match="expects 1 argument"):
        infer(Function((x,), Let(f, Function((Var("a"),), x), Call(f, (x, x)))))
    with pytest.raises(TypeInferenceError, match="call of %x: it is not a function"):
        infer(Function((x,), Call(x, (x,))))


def test_if_errors():
    x = Var("x", T(3))
    with pytest.raises(TypeInferenceError, match="condition must be Tensor"):
        infer(Function((x,), If(x, x, x)))
    with pytest.raises(TypeInferenceError, match="branches have different types"):
        infer(Function((x,), If(const(True), x, op("sum", x))))


def test_tuple_index_out_of_range():
    x = Var("x", T(3))
    with pytest.raises(TypeInferenceError, match=r"tuple index .2 is out of range"):
        infer(Function((x,), TupleGetItem(Tuple((x, x)), 2)))


def test_let_annotation_mismatch():
    x = Var("x", T(3))
    y = Var("y", T(4))
    with pytest.raises(TypeInferenceError, match="let %y"):
        infer(Function((x,), Let(y, x, y)))


def test_return_type_mismatch():
    x = Var("x", T(3))
    with pytest.raises(TypeInferenceError, match="return type"):
        infer(Function((x,), x, ret_type=T(4)))


def test_unsolvable_parameter_is_reported():
    g = Var("g")
    with pytest.raises(
        TypeInferenceError, match="nn.relu: cannot infer the type of argument `data`"
    ):
        infer(Function((g,), op("nn.relu", g)))
    h = Var("h")
    with pytest.raises(TypeInferenceError, match="cannot infer the type of `%h`"):
        infer(Function((h,), const(1.0)))


def test_unknown_operator_and_attribute_carry_the_span():
    span = Span("m.relay", 1, 2, 1, 9)
    x = Var("x", T(3))
    with pytest.raises(UnknownOperatorError) as info:
        infer(Function((x,), Call(Op("nn.relu6x"), (x,), span=span)))
    assert info.value.span is span
    with pytest.raises(OpTypeError, match="unknown attribute `axes`"):
        infer(Function((x,), op("sum", x, axes=[0])))


def test_infinite_type_is_an_error():
    f = Var("f")
    with pytest.raises(TypeInferenceError):
        infer(Function((f,), Call(f, (f,))))


def test_deep_graph_does_not_recurse():
    x = Var("x", T(2))
    value = x
    for _ in range(3000):
        value = op("add", value, const([1.0, 2.0]))
    mod = infer(Function((x,), value))
    assert type_str(mod["main"].body.checked_type) == "Tensor[(2,), float32]"


def test_verify_well_formed_and_well_typed():
    x = Var("x", T(3))
    stray = Var("stray", T(3))
    with pytest.raises(GraphVerifyError, match="`%stray` is used outside"):
        well_formed(Function((x,), op("add", x, stray)))
    y = Var("y", T(3))
    with pytest.raises(GraphVerifyError, match="bound twice"):
        well_formed(Function((x,), Let(y, x, Let(y, x, y))))
    with pytest.raises(GraphVerifyError, match="out of range"):
        well_formed(Function((x,), TupleGetItem(Tuple((x,)), 1)))
    f = Var("f")
    recursive = Function((x,), Let(f, Function((y,), Call(f, (y,))), x))
    well_formed(recursive)  # a let-bound function may call itself
    mod = IRModule.from_dict({"main": Function((x,), op("exp", x))})
    with pytest.raises(GraphVerifyError, match="no checked type"):
        well_typed(mod)


def test_verify_after_each_pass():
    x = Var("x", T(3))
    mod = IRModule.from_dict({"main": Function((x,), op("exp", x))})
    ctx = PassContext(verify=True, verifier=verify_module)
    typed = Sequential((InferType(), InferType()))(mod, ctx)
    assert typed["main"].checked_type is not None
    stray = Var("stray", T(3))
    broken = IRModule.from_dict({"main": Function((x,), op("add", x, stray))})
    with pytest.raises(GraphVerifyError, match="graph IR became invalid after pass `infer_type`"):
        InferType()(broken, ctx)


def test_tuple_type_annotations():
    t = Var("t", TupleType((T(2), T(3))))
    mod = infer(Function((t,), op("concatenate", t)))
    assert type_str(mod["main"].body.checked_type) == "Tensor[(5,), float32]"


def test_a_module_infer_type_gave_back_is_not_checked_again(monkeypatch):
    """Every graph rewrite types its input, then its result: the input is usually the module
    the last InferType gave back (immutable, so still typed), and checking it again was two
    fifths of a warm compile. A new module, even of the same functions, is checked."""
    from tessel.graph.passes import infer_type

    checked = []
    real = infer_type.infer_module_types
    monkeypatch.setattr(infer_type, "infer_module_types", lambda m: checked.append(m) or real(m))
    x = Var("x", T(2, 3))
    typed = infer(Function((x,), op("nn.relu", x)))
    assert len(checked) == 1
    assert InferType()(typed) is typed
    assert len(checked) == 1
    again = IRModule.from_dict({"main": typed["main"]})
    assert InferType()(again) is again  # checked, found typed, kept
    assert len(checked) == 2
    assert InferType()(again) is again
    assert len(checked) == 2
    assert_fully_typed(again)
