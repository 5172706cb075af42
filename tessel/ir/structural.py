"""Structural equality and hashing: alpha-equivalent programs are equal.

Variables and buffers are definitions: the first time a pair meets they are bound to each
other (if their types agree), and every later meeting must respect that binding. Names of
variables and buffers are hints and never compared; block names and everything else are.
"""

from __future__ import annotations

import difflib
import enum
import hashlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from tessel.ir.expr import Var
from tessel.ir.node import Node, field_names

# Fields that are hints, not meaning, per binding kind.
_HINT_FIELDS = frozenset({"name", "name_hint"})
_MISSING = object()


def _binding_kind(node: Node) -> str | None:
    if isinstance(node, Var):
        return "var"
    return getattr(type(node), "structural_binding", None)


class _EqualChecker:
    def __init__(self, map_free_vars: bool = True) -> None:
        self.map_free_vars = map_free_vars
        self.lhs_to_rhs: dict[int, Any] = {}
        self.rhs_to_lhs: dict[int, Any] = {}
        self.mismatch_path: list[str] = []

    def equal(self, a: Any, b: Any, path: str = "") -> bool:
        if a is b and not isinstance(a, Node):
            return True
        ok = self._equal(a, b, path)
        if not ok and not self.mismatch_path:
            self.mismatch_path.append(path or "<root>")
        return ok

    def _equal(self, a: Any, b: Any, path: str) -> bool:
        if isinstance(a, Node) or isinstance(b, Node):
            return self._nodes(a, b, path)
        if isinstance(a, tuple | list) and isinstance(b, tuple | list):
            return len(a) == len(b) and all(
                self.equal(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=True))
            )
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            return self._mappings(a, b, path)
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return _arrays_equal(a, b)
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return type(a) is type(b) and a == b

    def _mappings(self, a: Mapping, b: Mapping, path: str) -> bool:
        """Maps are unordered, as TVM's are: each key of `a` meets its counterpart in `b`
        (the same plain key, or the variable bound to it); in order if a key has none yet."""
        if len(a) != len(b):
            return False
        pairs = self._paired_keys(a, b)
        if pairs is None:
            pairs = list(zip(a, b, strict=True))
        return all(
            self.equal(ka, kb, f"{path}.key") and self.equal(a[ka], b[kb], f"{path}[{ka!r}]")
            for ka, kb in pairs
        )

    def _paired_keys(self, a: Mapping, b: Mapping) -> list[tuple[Any, Any]] | None:
        """Each key of `a` with its counterpart in `b`; None if some key cannot be looked up."""
        plain = {(type(k), k): k for k in b if not isinstance(k, Node)}
        pairs = []
        for key in a:
            if isinstance(key, Node):
                other = self._bound_counterpart(key, b)
            else:
                other = plain.get((type(key), key), _MISSING)
            if other is _MISSING or (isinstance(other, Node) and other not in b):
                return None
            pairs.append((key, other))
        return pairs

    def _bound_counterpart(self, key: Node, b: Mapping) -> Any:
        """The key of `b` that `key` is bound to; `key` itself if both sides hold that very
        object and it is bound to nothing else (identical subtrees are never walked)."""
        if _binding_kind(key) is None:
            return _MISSING
        if not self.map_free_vars:
            return key
        if id(key) in self.lhs_to_rhs:
            return self.lhs_to_rhs[id(key)]
        if id(key) not in self.rhs_to_lhs and key in b:
            return key
        return _MISSING

    def _nodes(self, a: Any, b: Any, path: str) -> bool:
        if type(a) is not type(b):
            return False
        kind = _binding_kind(a)
        if kind is None:
            return self._fields(a, b, path, skip=frozenset())
        if not self.map_free_vars:
            return a is b
        if id(a) in self.lhs_to_rhs:
            return self.lhs_to_rhs[id(a)] is b
        if id(b) in self.rhs_to_lhs:
            return False
        if not self._fields(a, b, path, skip=_HINT_FIELDS):
            return False
        self.lhs_to_rhs[id(a)], self.rhs_to_lhs[id(b)] = b, a
        return True

    def _fields(self, a: Node, b: Node, path: str, skip: frozenset[str]) -> bool:
        return all(
            self.equal(getattr(a, name), getattr(b, name), f"{path}.{name}")
            for name in field_names(type(a))
            if name not in skip
        )


def _arrays_equal(a: Any, b: Any) -> bool:
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def structural_equal(a: Any, b: Any, *, map_free_vars: bool = True) -> bool:
    """True if `a` and `b` are the same program up to renaming of variables and buffers.

    With `map_free_vars=False` variables and buffers are compared by identity: the question
    "is this the same expression of the same variables" that arithmetic asks (`i // 4` is not
    `j // 4`).
    """
    return _EqualChecker(map_free_vars).equal(a, b)


def assert_structural_equal(actual: Any, expected: Any) -> None:
    """Raise AssertionError with a diff of the two printed scripts if they differ."""
    checker = _EqualChecker()
    if checker.equal(actual, expected):
        return
    left, right = str(actual).splitlines(), str(expected).splitlines()
    diff = "\n".join(difflib.unified_diff(right, left, "expected", "actual", lineterm=""))
    where = checker.mismatch_path[0] if checker.mismatch_path else "?"
    raise AssertionError(
        f"IR differs structurally (first difference at {where}):\n"
        f"{diff or '(the printed scripts are identical; the difference is in variable binding)'}"
    )


class _Hasher:
    def __init__(self, map_free_vars: bool = True, memo: dict[int, tuple[Any, int]] | None = None):
        self.map_free_vars = map_free_vars
        self.numbering: dict[int, int] = {}
        self.memo = memo

    def hash(self, value: Any) -> int:
        if isinstance(value, Node):
            return self._node(value)
        if isinstance(value, tuple | list):
            return hash(("seq", *(self.hash(v) for v in value)))
        if isinstance(value, Mapping):
            return self._mapping(value)
        if isinstance(value, np.ndarray):
            return hash(("array", str(value.dtype), value.shape, value.tobytes()))
        if isinstance(value, float) and math.isnan(value):
            return hash("nan")
        return hash(value)

    def _mapping(self, value: Mapping) -> int:
        """Independent of the order of the items (maps are unordered for equality too)."""
        keyed = [(self.hash(k), index, k) for index, k in enumerate(value)]
        keyed.sort(key=lambda item: item[:2])  # ties keep insertion order
        return hash(("map", *((h, self.hash(value[k])) for h, _, k in keyed)))

    def _node(self, node: Node) -> int:
        if self.memo is not None:
            cached = self.memo.get(id(node))
            if cached is not None and cached[0] is node:
                return cached[1]
            result = self._node_uncached(node)
            self.memo[id(node)] = (node, result)
            return result
        return self._node_uncached(node)

    def _node_uncached(self, node: Node) -> int:
        kind = _binding_kind(node)
        if kind is not None and not self.map_free_vars:
            return hash(("identity", id(node)))
        if kind is not None and id(node) in self.numbering:
            return hash(("bound", self.numbering[id(node)]))
        skip = _HINT_FIELDS if kind is not None else frozenset()
        parts = [
            self.hash(getattr(node, name)) for name in field_names(type(node)) if name not in skip
        ]
        if kind is not None:
            self.numbering[id(node)] = len(self.numbering)
        return hash((type(node).__name__, *parts))


def structural_hash(value: Any, *, map_free_vars: bool = True) -> int:
    """A hash consistent with `structural_equal` (with the same `map_free_vars`)."""
    return _Hasher(map_free_vars).hash(value)


def structural_digest(value: Any) -> str:
    """sha256 of everything `value` means, names included, the same in every process: equal
    digests are equal programs with the same names (what a compiled artifact depends on), so
    it keys caches across runs. Unlike a printed script, it tells two distinct variables or
    buffers that print with one name apart. A TypeError for a value that has no exact digest
    (an object whose repr is its address)."""
    digester = _Digester()
    digester.feed(value)
    return digester.sha.hexdigest()


class _Digester:
    """Writes a value to a sha256 as a sequence of tagged tokens; a variable or buffer is
    written whole where first met and as its number afterwards, so sharing is part of it."""

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.numbering: dict[int, int] = {}
        self.keep: list[Any] = []  # numbered nodes stay alive, so their ids stay theirs

    def put(self, token: str) -> None:
        self.sha.update(token.encode())
        self.sha.update(b"\0")

    def feed(self, value: Any) -> None:
        if isinstance(value, Node):
            self._node(value)
        elif isinstance(value, tuple | list):
            self.put(f"seq {len(value)}")
            for item in value:
                self.feed(item)
        elif isinstance(value, Mapping):
            self.put(f"map {len(value)}")
            for key, item in value.items():
                self.feed(key)
                self.feed(item)
        elif isinstance(value, np.ndarray):
            self.put(f"array {value.dtype.str} {value.shape}")
            self.sha.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, enum.Enum):
            self.put(f"enum {type(value).__name__}.{value.name}")
        elif type(value).__repr__ is object.__repr__:
            # Its repr is an address: no digest says what it holds.
            raise TypeError(f"no structural digest of a {type(value).__name__}")
        else:
            self.put(f"{type(value).__name__} {value!r}")

    def _node(self, node: Node) -> None:
        binding = _binding_kind(node) is not None
        if binding and id(node) in self.numbering:
            self.put(f"ref {self.numbering[id(node)]}")
            return
        if binding:
            self.numbering[id(node)] = len(self.numbering)
            self.keep.append(node)
        names = field_names(type(node))
        self.put(f"node {type(node).__name__} {len(names)}")
        for name in names:
            self.feed(getattr(node, name))


def expr_hash(value: Any, memo: dict[int, tuple[Any, int]]) -> int:
    """A hash consistent with `same_expr`; `memo` (node id -> (node, hash)) carries sub-results
    across calls, so hashing many nested expressions costs each node once."""
    return _Hasher(map_free_vars=False, memo=memo).hash(value)


def same_expr(a: Any, b: Any) -> bool:
    """`a` and `b` are the same expression over the same variables and buffers (no renaming)."""
    return a is b or _EqualChecker(map_free_vars=False).equal(a, b)
