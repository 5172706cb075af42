"""The `tessel` command's progress displays (tessel/cli/progress.py), and its quiet exit when
the reader of its output goes away (`tessel ... | head`)."""

import io
import subprocess
import sys

import pytest

from tessel.cli.progress import PlainProgress, RichProgress, command_progress
from tessel.support.progress import NO_PROGRESS


def _texts(lines: list[str]) -> list[str]:
    """The lines without their `[  1.2 s] ` elapsed-time prefix."""
    return [line.split("] ", 1)[1].rstrip("\n") for line in lines]


def test_plain_lines_show_each_stage_the_periodic_count_and_the_end():
    lines: list[str] = []
    progress = PlainProgress(lines.append, interval=0.0)  # a line at every item
    progress.stage("importing m.onnx")
    progress.stage("scheduling kernels", total=3)
    for _ in range(3):
        progress.advance()
    progress.stage("compiling and linking C")
    progress.finish()
    texts = _texts(lines)
    assert texts[0] == "importing m.onnx"
    assert texts[1] == "scheduling kernels: 0/3"
    assert texts[2].startswith("scheduling kernels: 1/3, about ") and texts[2].endswith(" s left")
    assert texts[3].startswith("scheduling kernels: 2/3, about ")
    assert texts[4].startswith("scheduling kernels: 3/3 done in ")
    assert texts[5:] == ["compiling and linking C", "done"]


def test_plain_lines_are_periodic_not_one_per_item():
    lines: list[str] = []
    progress = PlainProgress(lines.append, interval=3600.0)
    progress.stage("scheduling kernels", total=500)
    for _ in range(500):
        progress.advance()
    progress.finish()
    assert _texts(lines)[0] == "scheduling kernels: 0/500"
    assert _texts(lines)[1].startswith("scheduling kernels: 500/500 done in ")
    assert len(lines) == 3


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_rich_display_a_log_plain_lines_quiet_nothing():
    with command_progress(quiet=False, stream=_Terminal()) as progress:
        assert isinstance(progress, RichProgress)
    with command_progress(quiet=False, stream=io.StringIO()) as progress:
        assert isinstance(progress, PlainProgress)
    stream = _Terminal()
    with command_progress(quiet=True, stream=stream) as progress:
        assert progress is NO_PROGRESS
        progress.stage("graph passes", total=2)
    assert stream.getvalue() == ""


def test_the_rich_display_shows_stages_and_counts():
    stream = _Terminal()
    with command_progress(quiet=False, stream=stream) as progress:
        progress.stage("scheduling kernels", total=2)
        progress.advance()
        progress.advance()
        progress.stage("compiling and linking C")
    text = stream.getvalue()
    assert "scheduling kernels" in text and "2/2" in text and "compiling and linking C" in text


def test_an_error_ends_the_plain_lines_without_done():
    stream = io.StringIO()
    with pytest.raises(RuntimeError), command_progress(quiet=False, stream=stream) as progress:
        progress.stage("scheduling kernels", total=2)
        raise RuntimeError("boom")
    assert _texts(stream.getvalue().splitlines()) == ["scheduling kernels: 0/2"]


def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    script = tmp_path / "add_one.py"
    script.write_text(
        "@T.prim_func\n"
        "def add_one(A: T.Buffer((4,), 'int32')):\n"
        "    for i in range(4):\n"
        "        A[i] = A[i] + 1\n"
    )
    command = [sys.executable, "-c", "import sys; from tessel.cli import main; sys.exit(main())",
               "print", str(script)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before the command writes anything
    _, err = process.communicate(timeout=120)
    assert b"Broken pipe" not in err and b"BrokenPipeError" not in err, err.decode()
    assert err == b""
    assert process.returncode == 141
