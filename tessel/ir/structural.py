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
    """Compares two values walking both in step, depth-first and left to right, with an explicit
    stack (deep IR must not hit Python's recursion limit): a pair of definitions is bound once
    every field of it has been compared, as a recursive walk would."""

    def __init__(self, map_free_vars: bool = True) -> None:
        self.map_free_vars = map_free_vars
        self.lhs_to_rhs: dict[int, Any] = {}
        self.rhs_to_lhs: dict[int, Any] = {}
        self.mismatch_path: list[str] = []

    def equal(self, a: Any, b: Any, path: str = "") -> bool:
        stack: list[tuple[Any, Any, str | None]] = [(a, b, path)]
        while stack:
            x, y, where = stack.pop()
            if where is None:  # all fields of a definition pair matched: bind them
                self.lhs_to_rhs[id(x)], self.rhs_to_lhs[id(y)] = y, x
                continue
            if x is y and not isinstance(x, Node):
                continue
            if not self._step(x, y, where, stack):
                self.mismatch_path.append(where or "<root>")
                return False
        return True

    def _step(self, a: Any, b: Any, path: str, stack: list) -> bool:
        """Compare what can be compared here; push the pairs of children still to compare."""
        if isinstance(a, Node) or isinstance(b, Node):
            return self._nodes(a, b, path, stack)
        if isinstance(a, tuple | list) and isinstance(b, tuple | list):
            if len(a) != len(b):
                return False
            stack.extend((a[i], b[i], f"{path}[{i}]") for i in reversed(range(len(a))))
            return True
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            return self._mappings(a, b, path, stack)
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return _arrays_equal(a, b)
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return type(a) is type(b) and a == b

    def _mappings(self, a: Mapping, b: Mapping, path: str, stack: list) -> bool:
        """Maps are unordered, as TVM's are: each key of `a` meets its counterpart in `b`
        (the same plain key, or the variable bound to it); in order if a key has none yet."""
        if len(a) != len(b):
            return False
        pairs = self._paired_keys(a, b)
        if pairs is None:
            pairs = list(zip(a, b, strict=True))
        for ka, kb in reversed(pairs):
            stack.append((a[ka], b[kb], f"{path}[{ka!r}]"))
            stack.append((ka, kb, f"{path}.key"))
        return True

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

    def _nodes(self, a: Any, b: Any, path: str, stack: list) -> bool:
        if type(a) is not type(b):
            return False
        kind = _binding_kind(a)
        if kind is None:
            self._push_fields(a, b, path, frozenset(), stack)
            return True
        if not self.map_free_vars:
            return a is b
        if id(a) in self.lhs_to_rhs:
            return self.lhs_to_rhs[id(a)] is b
        if id(b) in self.rhs_to_lhs:
            return False
        stack.append((a, b, None))  # bind once the fields below have matched
        self._push_fields(a, b, path, _HINT_FIELDS, stack)
        return True

    @staticmethod
    def _push_fields(a: Node, b: Node, path: str, skip: frozenset[str], stack: list) -> None:
        names = [name for name in field_names(type(a)) if name not in skip]
        stack.extend((getattr(a, n), getattr(b, n), f"{path}.{n}") for n in reversed(names))


def _arrays_equal(a: Any, b: Any) -> bool:
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object:  # strings (graph Constants of ONNX strings): no NaN to equate
        return bool(np.array_equal(a, b))
    return bool(np.array_equal(a, b, equal_nan=True))


def _array_bytes(value: np.ndarray) -> bytes:
    """What an array holds, as bytes: its memory, or for an object array (strings) the UTF-8
    of each element's repr, since its memory holds addresses."""
    if value.dtype == object:
        return "\0".join(repr(v) for v in value.flat).encode("utf-8", "surrogateescape")
    return np.ascontiguousarray(value).tobytes()


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


_ENTER, _NODE, _SEQ, _MAP_KEYS, _MAP = range(5)


class _Hasher:
    """Hashes bottom-up with an explicit stack (deep IR must not hit Python's recursion limit):
    `_ENTER` items are values still to hash, the others combine the hashes of the children
    just computed, which wait on `results`."""

    def __init__(self, map_free_vars: bool = True, memo: dict[int, tuple[Any, int]] | None = None):
        self.map_free_vars = map_free_vars
        self.numbering: dict[int, int] = {}
        self.memo = memo

    def hash(self, value: Any) -> int:
        results: list[int] = []
        stack: list[tuple[int, Any, int]] = [(_ENTER, value, 0)]
        while stack:
            action, item, count = stack.pop()
            if action == _ENTER:
                self._enter(item, stack, results)
                continue
            parts = results[len(results) - count :] if count else []
            del results[len(results) - count :]
            if action == _MAP_KEYS:
                self._map_values(item, parts, stack, results)
            else:
                results.append(self._combine(action, item, parts))
        return results[0]

    def _enter(self, value: Any, stack: list, results: list[int]) -> None:
        if isinstance(value, Node):
            self._enter_node(value, stack, results)
        elif isinstance(value, tuple | list):
            stack.append((_SEQ, value, len(value)))
            stack.extend((_ENTER, v, 0) for v in reversed(value))
        elif isinstance(value, Mapping):
            keys = list(value)
            stack.append((_MAP_KEYS, (value, keys), len(keys)))
            stack.extend((_ENTER, k, 0) for k in reversed(keys))
        elif isinstance(value, np.ndarray):
            results.append(hash(("array", str(value.dtype), value.shape, _array_bytes(value))))
        elif isinstance(value, float) and math.isnan(value):
            results.append(hash("nan"))
        else:
            results.append(hash(value))

    def _map_values(self, item: Any, key_hashes: list[int], stack: list, results: list) -> None:
        """Independent of the order of the items (maps are unordered for equality too): the
        values are hashed in the order of their keys' hashes; ties keep insertion order."""
        mapping, keys = item
        order = sorted(range(len(keys)), key=lambda index: (key_hashes[index], index))
        stack.append((_MAP, [key_hashes[i] for i in order], len(keys)))
        stack.extend((_ENTER, mapping[keys[i]], 0) for i in reversed(order))

    def _enter_node(self, node: Node, stack: list, results: list[int]) -> None:
        if self.memo is not None:
            cached = self.memo.get(id(node))
            if cached is not None and cached[0] is node:
                results.append(cached[1])
                return
        kind = _binding_kind(node)
        if kind is not None and not self.map_free_vars:
            results.append(hash(("identity", id(node))))
            return
        if kind is not None and id(node) in self.numbering:
            results.append(hash(("bound", self.numbering[id(node)])))
            return
        skip = _HINT_FIELDS if kind is not None else frozenset()
        names = [name for name in field_names(type(node)) if name not in skip]
        stack.append((_NODE, node, len(names)))
        stack.extend((_ENTER, getattr(node, name), 0) for name in reversed(names))

    def _combine(self, action: int, item: Any, parts: list[int]) -> int:
        if action == _SEQ:
            return hash(("seq", *parts))
        if action == _MAP:
            return hash(("map", *zip(item, parts, strict=True)))
        if _binding_kind(item) is not None:
            self.numbering[id(item)] = len(self.numbering)
        result = hash((type(item).__name__, *parts))
        if self.memo is not None:
            self.memo[id(item)] = (item, result)
        return result


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
        """Write `value`, depth-first with an explicit stack (deep IR must not hit Python's
        recursion limit)."""
        stack: list[Any] = [value]
        while stack:
            self._feed_one(stack.pop(), stack)

    def _feed_one(self, value: Any, stack: list[Any]) -> None:
        """Write `value`'s own token; push its parts, to be written next, in order."""
        if isinstance(value, Node):
            self._node(value, stack)
        elif isinstance(value, tuple | list):
            self.put(f"seq {len(value)}")
            stack.extend(reversed(value))
        elif isinstance(value, Mapping):
            self.put(f"map {len(value)}")
            for key, item in reversed(list(value.items())):
                stack.extend((item, key))
        elif isinstance(value, np.ndarray):
            self.put(f"array {value.dtype.str} {value.shape}")
            self.sha.update(_array_bytes(value))
        elif isinstance(value, enum.Enum):
            self.put(f"enum {type(value).__name__}.{value.name}")
        elif type(value).__repr__ is object.__repr__:
            # Its repr is an address: no digest says what it holds.
            raise TypeError(f"no structural digest of a {type(value).__name__}")
        else:
            self.put(f"{type(value).__name__} {value!r}")

    def _node(self, node: Node, stack: list[Any]) -> None:
        binding = _binding_kind(node) is not None
        if binding and id(node) in self.numbering:
            self.put(f"ref {self.numbering[id(node)]}")
            return
        if binding:
            self.numbering[id(node)] = len(self.numbering)
            self.keep.append(node)
        names = field_names(type(node))
        self.put(f"node {type(node).__name__} {len(names)}")
        stack.extend(getattr(node, name) for name in reversed(names))


def expr_hash(value: Any, memo: dict[int, tuple[Any, int]]) -> int:
    """A hash consistent with `same_expr`; `memo` (node id -> (node, hash)) carries sub-results
    across calls, so hashing many nested expressions costs each node once."""
    return _Hasher(map_free_vars=False, memo=memo).hash(value)


def same_expr(a: Any, b: Any) -> bool:
    """`a` and `b` are the same expression over the same variables and buffers (no renaming)."""
    return a is b or _EqualChecker(map_free_vars=False).equal(a, b)
