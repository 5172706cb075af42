"""An immutable, hashable mapping used for annotations and attributes on IR nodes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V], Generic[K, V]):
    """A read-only dict preserving insertion order; nothing mutable hangs off an IR node."""

    __slots__ = ("_data", "_hash")

    def __init__(self, items: Mapping[K, V] | Any = ()) -> None:
        self._data: dict[K, V] = dict(items)
        self._hash: int | None = None

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._data == other._data
        return isinstance(other, Mapping) and self._data == dict(other)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def set(self, key: K, value: V) -> FrozenMap[K, V]:
        """A copy with `key` bound to `value`."""
        return FrozenMap({**self._data, key: value})

    def without(self, key: K) -> FrozenMap[K, V]:
        """A copy without `key` (the same map if absent)."""
        if key not in self._data:
            return self
        return FrozenMap({k: v for k, v in self._data.items() if k != key})


def freeze(value: Any) -> Any:
    """Turn lists into tuples and dicts into FrozenMaps, recursively (annotation values)."""
    if isinstance(value, Mapping):
        return FrozenMap({freeze(k): freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value
