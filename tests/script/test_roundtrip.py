"""Round trip over the corpus: parse, print, parse again; the IR and the text must be stable.

Each file in corpus/ is one script (a real Python file, so editors check its syntax); the test
reads it as text. Scripts come from TVM's design discussions (docs/architecture.md §12) and
cover every construct of docs/dialect.md.
"""

from pathlib import Path

import pytest

from tessel.ir import assert_structural_equal
from tessel.script import parse
from tessel.script.printer import script

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.py"))


def _parsed(path: Path):
    return parse(path.read_text(), str(path))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_printed_script_parses_back_to_equal_ir(path):
    original = _parsed(path)
    text = script(original)
    reparsed = parse(text, f"<printed {path.stem}>")
    assert_structural_equal(reparsed, original)
    assert script(original) == text, "printing twice gave different text"
    assert script(reparsed) == text, "the printed text is not a fixed point of parse + print"


def test_corpus_holds_at_least_forty_distinct_scripts():
    texts = {path.read_text() for path in CORPUS}
    assert len(texts) == len(CORPUS) >= 40


# What the printed corpus must exercise: each construct of the dialect, printed at least once.
CONSTRUCTS = [
    "T.Buffer((",
    "a: T.handle",
    "= T.int32()",
    "is_size_var=True",
    "T.match_buffer(a,",
    "T.match_buffer(A[",
    "strides=",
    "elem_offset=",
    'scope="',
    "align=",
    "offset_factor=",
    "axis_separators=",
    "T.func_attr(",
    "@T.prim_func(private=True)",
    "@I.ir_module",
    "I.module_attrs(",
    '# with T.block("root"):',
    'with T.block("root"):',
    "T.grid(",
    "in range(",
    "in range(2, 10)",
    "T.serial(",
    "T.parallel(",
    "T.vectorized(",
    "T.unroll(",
    "T.thread_binding(",
    "annotations={",
    "T.axis.remap(",
    "T.axis.spatial(",
    "T.axis.reduce(",
    "T.axis.scan((",
    "T.axis.opaque(",
    "T.where(",
    "T.reads()",
    "T.writes(",
    "T.block_attr(",
    "T.alloc_buffer(",
    "with T.init():",
    "x[()]",
    "while ",
    "if ",
    "else:",
    "assert ",
    ": T.int32 = ",
    "T.let(",
    "T.allocate([",
    "with T.allocate(",
    "T.decl_buffer(",
    "T.allocate_const([",
    "irmod_storage_idx=",
    "T.attr(",
    "T.evaluate(",
    "T.call_extern(",
    "T.undef()",
    "T.assume(",
    "T.likely(",
    "T.if_then_else(",
    "T.Select(",
    "T.Cast(",
    "T.exp(",
    "T.sqrt(",
    "T.pow(",
    "T.isnan(",
    "T.bitwise_and(",
    "T.shift_left(",
    "T.Ramp(",
    "T.Broadcast(",
    ".vload([",
    ".vstore([",
    "predicate=",
    "T.truncdiv(",
    "T.truncmod(",
    "T.min(",
    "T.max(",
    " // ",
    " % ",
    " - -3",
    "(a + b) * c",
    "a - (b - c)",
    "not ",
    " and ",
    " or ",
    'T.float32("inf")',
    'T.float32("-inf")',
    'T.float32("nan")',
    "T.float64(",
    "T.float16(",
    "T.int64(",
    "T.int8(",
    "T.uint8(",
    "True",
]


def test_corpus_exercises_every_construct():
    printed = "\n".join(script(_parsed(path)) for path in CORPUS)
    missing = [construct for construct in CONSTRUCTS if construct not in printed]
    assert not missing, f"no corpus script prints {missing}"
