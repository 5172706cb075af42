"""The schedule report (tessel.graph.schedule_report, `tessel show --schedules`): the kernels it
plans are the ones `graph.compile` builds, each with the plans of the rules that scheduled it,
and scheduling by those records gives the compiled kernels."""

from graph_models import INPUTS, load, random_weights

import tessel.graph as graph
from tessel.graph.schedule_report import kernel_plans, schedule_report
from tessel.ir.structural import structural_equal
from tessel.schedule.rules.conv_nchwc import ConvNCHWcPlan
from tessel.schedule.rules.gemm import GemmPlan
from tessel.schedule.rules.plan import LAYOUT_REWRITE_PREPROC


def test_the_cnns_kernels_get_the_compiles_names_and_their_rules_plans():
    mod = load("cnn")
    weights = random_weights(mod, INPUTS["cnn"])
    kernels = kernel_plans(mod, weights)
    compiled = graph.compile(mod, params=weights)
    names = {gv.name_hint for gv in compiled.lowered.functions if gv.name_hint != "main"}
    assert {name for name, _ in kernels} == names
    plans = [applied.plan for _, report in kernels for applied in report.applied]
    assert any(isinstance(plan, ConvNCHWcPlan) for plan in plans)
    assert any(isinstance(plan, GemmPlan) for plan in plans)
    # The report's schedules are the compile's kernels, except where LayoutRewrite lifted a
    # marked packing stage out of the compiled kernel (the dense weight's panels).
    compared = 0
    for name, report in kernels:
        if LAYOUT_REWRITE_PREPROC not in report.schedule.func.script():
            assert structural_equal(report.schedule.func, compiled.lowered[name]), name
            compared += 1
    assert compared == len(kernels) - 1
    text = schedule_report(kernels)
    assert text.count("kernel ") == len(kernels)
    assert "ConvNCHWcPlan(block=" in text
