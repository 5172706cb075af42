"""`T.target(...)`: a target as a function attribute value, kept in TVM's dict form when it
has a host (`T.target("cuda", host="llvm")` is `T.target({"kind": "cuda", "host": "llvm"})`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tessel.ir.target import TargetValue
from tessel.script.errors import ArgumentError
from tessel.support.frozen_map import freeze


def target(config: Any, host: Any = None) -> TargetValue:
    """A target as an attribute value: `T.target("llvm")`, `T.target({"kind": "cuda", ...})`;
    `host=` (a string or a dict) becomes the config's "host", the dict form TVM prints."""
    if isinstance(config, str) and host is None:
        return TargetValue(config)
    if isinstance(config, str):
        config = _target_dict(config)
    if not (isinstance(config, Mapping) and isinstance(config.get("kind"), str)):
        raise ArgumentError(
            'T.target expects a target string such as "llvm" or a dict with a "kind", '
            f"got {config!r}",
            0,
        )
    if host is not None:
        if "host" in config:
            raise ArgumentError("T.target got a host twice: in the dict and as host=", "host")
        if not (isinstance(host, str) or isinstance(host, Mapping) and "kind" in host):
            raise ArgumentError(
                f'T.target: host= must be a target string or a dict with a "kind", got {host!r}',
                "host",
            )
        config = {**config, "host": host}
    return TargetValue(freeze(config))


def _target_dict(text: str) -> dict[str, Any]:
    """`"llvm -mcpu=skylake -mattr=+avx2,+fma"` as TVM's dict form: the kind, then each
    `-name=value` option (an int if it is digits, a list if it has commas; `-name` is True)."""
    if not text.split():
        raise ArgumentError('T.target expects a target such as "llvm", got an empty string', 0)
    kind, *options = text.split()
    config: dict[str, Any] = {"kind": kind}
    for option in options:
        name, has_value, value = option.removeprefix("-").partition("=")
        if not option.startswith("-") or not name:
            raise ArgumentError(
                f"T.target: cannot read the option {option!r} of {text!r}",
                0,
                hint='options are written "-name=value"',
            )
        config[name] = _target_option(value) if has_value else True
    return config


def _target_option(value: str) -> Any:
    if "," in value:
        return [_target_option(v) for v in value.split(",")]
    return int(value) if value.isdigit() else value
