"""The metadata table: values referenced from the text as `meta[kind][i]`: tensors too big to
print inline (`meta[relay.Constant][i]`) and virtual devices (`meta[VirtualDevice][i]`, the
values of `virtual_device=` and of on_device's and device_copy's attributes).

The printer appends it after `#[metadata]` as JSON (our own encoding, not TVM's):
`{"relay.Constant": [{"dtype": "float32", "shape": [4, 3], "data": "<base64 of the bytes,
little-endian, C order>"}], "VirtualDevice": [{"device_type_int": 2, "virtual_device_id": 0,
"target": null, "memory_scope": ""}]}`; a device's keys are the attributes TVM gives a
VirtualDevice, a missing one is unconstrained, and a target is null, a kind name ("c") or an
object of Target fields. Strings are a list: `{"dtype": "string", "shape": [2], "data": ["a",
"b"]}`. A parser can also be handed the table (`init_meta_table`), as TVM's tests hand
`{"VirtualDevice": [CPU, GPU]}` to `relay.parse`.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tessel.graph.expr import Constant
from tessel.ir.target import Target
from tessel.ir.virtual_device import VirtualDevice
from tessel.support.errors import UserError

CONSTANT_KIND = "relay.Constant"
DEVICE_KIND = "VirtualDevice"
KINDS = (CONSTANT_KIND, DEVICE_KIND)
_DEVICE_KEYS = ("device_type_int", "virtual_device_id", "target", "memory_scope")


class MetadataError(ValueError):
    """Metadata that cannot be read; `line`/`column` locate it in the JSON text when known,
    else the parser reports it at the `#[metadata]` marker."""

    def __init__(
        self,
        message: str,
        line: int | None = None,
        column: int | None = None,
        entry: tuple[str, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column
        self.entry = entry  # (kind, index) of the entry at fault, to locate it in the JSON


class MetaTable:
    """Entries by kind and index, as the printer assigns them (first appearance first)."""

    def __init__(self) -> None:
        self.constants: list[Constant] = []
        self.devices: list[VirtualDevice] = []
        self._index: dict[int, int] = {}
        self._device_index: dict[VirtualDevice, int] = {}

    def has_entries(self) -> bool:
        """Something was referenced, so the text needs a metadata section."""
        return bool(self.constants or self.devices)

    def reference(self, constant: Constant) -> str:
        """`meta[relay.Constant][i]` for `constant`, adding it to the table on first use."""
        index = self._index.get(id(constant))
        if index is None:
            index = self._index[id(constant)] = len(self.constants)
            self.constants.append(constant)
        return f"meta[{CONSTANT_KIND}][{index}]"

    def device_reference(self, device: VirtualDevice) -> str:
        """`meta[VirtualDevice][i]` for `device`, adding it to the table on first use."""
        # Equal devices share an entry: they compare by value, as TVM's interned ones do by id.
        index = self._device_index.get(device)
        if index is None:
            index = self._device_index[device] = len(self.devices)
            self.devices.append(device)
        return f"meta[{DEVICE_KIND}][{index}]"

    def to_json(self) -> str:
        """The table as the JSON text following `#[metadata]`."""
        sections = []
        if self.constants:
            sections.append((CONSTANT_KIND, [_encode(c.data) for c in self.constants]))
        if self.devices:
            sections.append((DEVICE_KIND, [encode_device(d) for d in self.devices]))
        parts = []
        for kind, entries in sections:
            body = ",\n".join(f"    {json.dumps(e)}" for e in entries)
            parts.append(f'  "{kind}": [\n{body}\n  ]')
        return "{\n" + ",\n".join(parts) + "\n}"


def _encode(data: np.ndarray) -> dict[str, Any]:
    if data.dtype == object:  # strings (Constant keeps them as `str`): a JSON list, flat
        return {"dtype": "string", "shape": list(data.shape), "data": [str(s) for s in data.flat]}
    little = np.ascontiguousarray(data).astype(data.dtype.newbyteorder("<"), copy=False)
    payload = base64.b64encode(little.tobytes()).decode("ascii")
    return {"dtype": str(data.dtype), "shape": list(data.shape), "data": payload}


def _decode(entry: Any, position: int) -> Constant:
    if isinstance(entry, Constant):
        return entry
    if isinstance(entry, np.ndarray):
        return Constant(entry)
    if not (isinstance(entry, Mapping) and {"dtype", "shape", "data"} <= set(entry)):
        raise MetadataError(f"entry {position} needs the keys dtype, shape and data")
    if entry["dtype"] == "string":
        return _decode_strings(entry, position)
    try:
        dtype = np.dtype(entry["dtype"]).newbyteorder("<")
        raw = base64.b64decode(entry["data"], validate=True)
        array = np.frombuffer(raw, dtype=dtype).reshape(tuple(entry["shape"]))
    except (TypeError, ValueError) as err:
        raise MetadataError(f"entry {position} cannot be decoded: {err}") from err
    return Constant(array.astype(dtype.newbyteorder("=")))


def _decode_strings(entry: Mapping[str, Any], position: int) -> Constant:
    values, shape = entry["data"], entry["shape"]
    if not (isinstance(values, list) and all(isinstance(v, str) for v in values)):
        raise MetadataError(f"entry {position} (strings) needs data: a list of strings")
    try:
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return Constant(array.reshape(tuple(shape)))
    except (TypeError, ValueError) as err:
        raise MetadataError(f"entry {position} cannot be decoded: {err}") from err


def encode_device(device: VirtualDevice) -> dict[str, Any]:
    """A VirtualDevice as a JSON object with TVM's attribute names."""
    return {
        "device_type_int": device.device_type,
        "virtual_device_id": device.virtual_device_id,
        "target": _encode_target(device.target),
        "memory_scope": device.memory_scope,
    }


def _encode_target(target: Target | None) -> Any:
    if target is None:
        return None
    default = Target()
    return {
        f.name: getattr(target, f.name)
        for f in dataclasses.fields(Target)
        if f.name == "kind" or getattr(target, f.name) != getattr(default, f.name)
    }


def _decode_device(entry: Any, position: int) -> VirtualDevice:
    where = f"meta[{DEVICE_KIND}][{position}]"
    if isinstance(entry, VirtualDevice):
        return entry
    if not isinstance(entry, Mapping):
        raise MetadataError(
            f"{where} must be a VirtualDevice or an object with the keys "
            f"{', '.join(_DEVICE_KEYS)}, not {entry!r}"
        )
    unknown = sorted(set(entry) - set(_DEVICE_KEYS))
    if unknown:
        raise MetadataError(
            f"{where} has the unknown key `{unknown[0]}`; "
            f"a VirtualDevice has {', '.join(_DEVICE_KEYS)}"
        )
    try:
        return VirtualDevice(
            _int_field(entry.get("device_type_int", -1)),
            _int_field(entry.get("virtual_device_id", -1)),
            _decode_target(entry.get("target")),
            entry.get("memory_scope", ""),
        )
    except UserError as err:
        raise MetadataError(f"{where} is not a valid VirtualDevice: {err.message}") from err


def _int_field(value: Any) -> Any:
    # TVM's own JSON writes attribute ints as strings ("1"); VirtualDevice checks the rest
    # (and takes a device type by name, "cuda").
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    return value


def _decode_target(value: Any) -> Target | None:
    if value is None or isinstance(value, Target):
        return value
    if isinstance(value, str):
        return Target(kind=value)
    names = {f.name for f in dataclasses.fields(Target)}
    if not isinstance(value, Mapping) or not set(value) <= names:
        raise UserError(
            f"a target is null, a kind name or an object of Target fields "
            f"({', '.join(sorted(names))}), not {value!r}"
        )
    return Target(**value)


_DECODERS = {CONSTANT_KIND: _decode, DEVICE_KIND: _decode_device}


def read_table(table: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    """Entries by kind from a table of Constants, arrays, VirtualDevices or JSON entries."""
    result: dict[str, list[Any]] = {}
    for kind, entries in table.items():
        decode = _DECODERS.get(kind)
        if decode is None:
            raise MetadataError(
                f"metadata kind `{kind}` is not supported; only `{CONSTANT_KIND}` and "
                f"`{DEVICE_KIND}`"
            )
        if isinstance(entries, str | Mapping) or not isinstance(entries, Sequence):
            raise MetadataError(f"the metadata kind `{kind}` must hold a list of entries")
        decoded = []
        for i, entry in enumerate(entries):
            try:
                decoded.append(decode(entry, i))
            except MetadataError as err:
                raise MetadataError(err.message, entry=(kind, i)) from err
        result[kind] = decoded
    return result


def parse_json(text: str) -> dict[str, list[Any]]:
    """The table from the JSON following `#[metadata]`; MetadataError names the line at fault."""
    # A malformed entry is reported where it starts (json.loads keeps no positions).
    try:
        table = json.loads(text)
    except json.JSONDecodeError as err:
        raise MetadataError(
            f"the metadata is not valid JSON: {err.msg}", err.lineno, err.colno
        ) from err
    if not isinstance(table, dict):
        raise MetadataError("the metadata must be a JSON object of kind -> list of entries")
    try:
        return read_table(table)
    except MetadataError as err:
        offset = None if err.entry is None else _entry_offset(text, *err.entry)
        if offset is None:
            raise
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        raise MetadataError(err.message, line, column, err.entry) from err


_SPACE = re.compile(r"\s*")


def _entry_offset(text: str, kind: str, position: int) -> int | None:
    """Where entry `position` of `kind` starts in the JSON `text` (valid JSON, an object of
    lists); json.loads keeps no positions, so the text is walked with raw_decode."""
    decoder = json.JSONDecoder()
    at = _SPACE.match(text, text.index("{") + 1).end()
    try:
        while text[at] == '"':
            key, at = decoder.raw_decode(text, at)
            at = _SPACE.match(text, at).end() + 1  # past `:`
            at = _SPACE.match(text, at).end()
            if key == kind and text[at] == "[":
                at = _SPACE.match(text, at + 1).end()
                for _ in range(position):
                    _, at = decoder.raw_decode(text, at)
                    at = _SPACE.match(text, _SPACE.match(text, at).end() + 1).end()  # `,`
                return at
            _, at = decoder.raw_decode(text, at)
            at = _SPACE.match(text, _SPACE.match(text, at).end() + 1).end()  # `,` or `}`
    except (ValueError, IndexError):
        return None
    return None
