"""Errors of the ONNX importer: the model uses something Tessel cannot import, or is malformed."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET
from tessel.support.errors import UserError


class OnnxImportError(UserError):
    """A node or input of the model cannot be imported as it is; the message names it."""


class DynamicInputError(OnnxImportError):
    """A graph input has no static shape and none was given. `suggestion` is a shape to give
    (1 for each dynamic dimension; None when the model gives no shape at all), `names` the
    names of its dynamic dimensions (`dim_param`s) that sizes may be given for instead; the hint
    says how to give them from Python (`shape=`, `dims=`) or, after `for_command_line`, with
    `--shape` and `--dim`."""

    def __init__(
        self,
        message: str,
        input_name: str,
        suggestion: tuple[int, ...] | None,
        *,
        names: tuple[str, ...] = (),
        command_line: bool = False,
    ) -> None:
        if command_line:
            dims = "x".join(map(str, suggestion)) if suggestion is not None else "D1xD2x..."
            hint = f"Tessel compiles static shapes; give them: --shape {input_name}={dims}"
            by_name = " ".join(f"--dim {name}=1" for name in names)
        else:
            dims = str(suggestion) if suggestion is not None else "(...)"
            hint = (
                f"Tessel compiles static shapes; give them: from_onnx(model, shape={{"
                f"{input_name!r}: {dims}}})"
            )
            by_name = "dims={" + ", ".join(f"{name!r}: 1" for name in names) + "}"
        if names:
            hint += f", or by dimension name for every input: {by_name}"
        if names and not command_line:
            symbolic = "dims={" + ", ".join(f"{name!r}: None" for name in names) + "}"
            hint += f"; or keep them symbolic (tessel.graph.evaluate runs any size): {symbolic}"
        super().__init__(message, rule="onnx.dynamic-input", hint=hint)
        self.input_name, self.suggestion, self.names = input_name, suggestion, names

    def for_command_line(self) -> DynamicInputError:
        """The same error with the hint given as the `tessel` command's flags."""
        return DynamicInputError(
            self.message, self.input_name, self.suggestion, names=self.names, command_line=True
        )


class ValueNeededError(OnnxImportError):
    """A node needs, at import, the value of a tensor computed from graph inputs (Reshape's shape,
    a reduction's axes, Pad's pads); `inputs` names the graph inputs it depends on. A caller that
    knows their values (onnx.backend's run: tessel.frontend.onnx.backend) can bind them and import
    again; until dynamic shapes exist, a compiled model cannot take them at run time."""

    def __init__(self, message: str, inputs: tuple[str, ...], *, rule: str, hint: str) -> None:
        super().__init__(message, rule=rule, hint=hint)
        self.inputs = inputs


@dataclass(frozen=True)
class UnsupportedUse:
    """One operator the importer has no converter for, with every node that uses it."""

    op_type: str
    domain: str
    opset: int
    nodes: tuple[str, ...]
    supported_opsets: tuple[int, int] | None  # the range the importer knows, if any

    def describe(self) -> str:
        """One line: `NonZero (opset 13): nodes `a`, `b``."""
        where = f"domain {self.domain}, " if self.domain not in ("", "ai.onnx") else ""
        known = ""
        if self.supported_opsets is not None:
            first, last = self.supported_opsets
            known = f"; Tessel imports {self.op_type} in opsets {first}-{last}"
        noun = "node" if len(self.nodes) == 1 else "nodes"
        names = ", ".join(f"`{n}`" for n in self.nodes)
        return f"{self.op_type} ({where}opset {self.opset}{known}): {noun} {names}"


class UnsupportedOperatorError(OnnxImportError):
    """The model uses operators the importer has no converter for; lists all of them at once."""

    def __init__(self, unsupported: tuple[UnsupportedUse, ...]) -> None:
        count = len(unsupported)
        lines = "\n".join(f"  {use.describe()}" for use in unsupported)
        super().__init__(
            f"the ONNX model uses {count} operator{'s' if count != 1 else ''} "
            f"Tessel cannot import:\n{lines}",
            rule="onnx.unsupported-operator",
            hint=f"re-export the model with an opset in {FIRST_OPSET}-{LAST_OPSET} or without "
            "these operators; `tessel.frontend.onnx.supported_operators()` lists what is covered",
        )
        self.unsupported = unsupported
