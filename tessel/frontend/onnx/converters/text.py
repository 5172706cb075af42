"""Text featurization: TfIdfVectorizer on integer or string tokens (pool_int64s, pool_strings),
as a composition of exact graph operators. The pool's n-grams become constant tables at import;
each n-gram length and skip distance compares shifted views of the input with them (equal, or
string.equal for a pool of strings, logical_and), counts the matches along the sequence (sum),
and the counts go to their output columns (take, or a product with a 0/1 matrix where several
n-grams share a column).

The semantics are those of onnx's reference implementation (onnx/reference/ops/
op_tfidf_vectorizer.py), whose counts onnxruntime's kernel shares: an n-gram of length n >= 2 at
skip distance d (1 <= d <= max_skip_count + 1) takes the items at p, p + d, ..., p + (n - 1) d;
unigrams are counted once, not once per skip distance; only lengths in [min_gram_length,
max_gram_length] count, but every length takes ids (ngram_indexes entries) in pool order; a pool
n-gram listed twice counts in the column of its last listing (the reference's trie keeps the last
id). The weights of IDF and TFIDF are indexed by output column, as in the reference, and TFIDF
rounds float32(count * weight) once. (onnxruntime 1.32 instead takes the weight of each n-gram's
own entry and adds it once per occurrence: the same result when ngram_indexes is 0, 1, 2, ...,
up to float32 rounding.)"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, tuple_of
from tessel.graph.expr import Expr

_MODES = ("TF", "IDF", "TFIDF")


@dataclass(frozen=True)
class _Pool:
    """The n-grams that count: for each length, a [grams, length] table of token values and the
    output column of each row; `width` is the output's last extent, max(ngram_indexes) + 1."""

    grams: dict[int, tuple[np.ndarray, np.ndarray]]
    width: int


def _ints(node: OnnxNode, name: str) -> list[int]:
    value = node.attr(name)
    return [] if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def _levels(node: OnnxNode, pool: list[int], counts: list[int]) -> list[tuple[int, int, int]]:
    """(length, first pool item, n-gram count) of each level of ngram_counts, checked: each level
    lies in the pool, levels do not run backwards, and each holds whole n-grams."""
    levels = []
    ends = [*counts[1:], len(pool)]
    for length, (start, end) in enumerate(zip(counts, ends, strict=True), start=1):
        if not 0 <= start <= end <= len(pool):
            raise node.error(
                f"ngram_counts {counts} is inconsistent: the {length}-grams would span pool items "
                f"[{start}, {end}), which must lie in [0, {len(pool)}] (pool_int64s has "
                f"{len(pool)} items) and not run backwards"
            )
        if (end - start) % length:
            raise node.error(
                f"ngram_counts {counts} is inconsistent: the {end - start} pool items of the "
                f"{length}-grams do not make whole {length}-grams"
            )
        levels.append((length, start, (end - start) // length))
    return levels


def _pool(node: OnnxNode, shortest: int, longest: int) -> _Pool:
    """The pool's n-grams of lengths [shortest, longest], checked against ngram_counts and
    ngram_indexes (the n-gram of id i, counting every length in pool order, goes to column
    ngram_indexes[i])."""
    strings = node.attr("pool_strings")
    pool: list = list(strings) if strings else _ints(node, "pool_int64s")
    counts, indexes = _ints(node, "ngram_counts"), _ints(node, "ngram_indexes")
    if not pool:
        raise node.error(
            "pool_int64s (or pool_strings) is missing or empty: the pool of n-grams is required"
        )
    if not counts:
        raise node.error(
            "ngram_counts is missing or empty: it gives where each n-gram length starts in the pool"
        )
    if not indexes:
        raise node.error("ngram_indexes is missing or empty: it gives each n-gram's output column")
    if min(indexes) < 0:
        raise node.error(f"ngram_indexes {indexes} holds a negative column")
    levels = _levels(node, pool, counts)
    if sum(grams for _, _, grams in levels) > len(indexes):
        raise node.error(
            f"ngram_indexes has {len(indexes)} entries, but the pool holds "
            f"{sum(grams for _, _, grams in levels)} n-grams (ngram_counts {counts}): one column "
            "per n-gram"
        )
    tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    ngram_id = 0
    token = object if strings else np.int64
    for length, start, grams in levels:
        if shortest <= length <= longest and grams:
            rows = np.asarray(pool[start : start + grams * length], dtype=token)
            rows = rows.reshape(grams, length)
            found = {tuple(row): indexes[ngram_id + g] for g, row in enumerate(rows.tolist())}
            # a repeated n-gram keeps the column of its last listing (dict: the last value wins)
            table = np.empty((len(found), length), dtype=token)
            table[...] = list(found) if found else table
            tables[length] = (table, np.asarray(list(found.values()), dtype=np.int64))
        ngram_id += grams
    return _Pool(tables, max(indexes) + 1)


def _within(rows: np.ndarray, columns: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The n-grams whose tokens an input of `dtype` can hold (others never match), in `dtype`."""
    if dtype == "string":
        return rows, columns
    info = np.iinfo(dtype)
    keep = np.all((rows >= info.min) & (rows <= info.max), axis=1)
    return rows[keep].astype(dtype), columns[keep]


def _matches(x: Expr, rows: np.ndarray, shape: tuple[int, int], distance: int) -> Expr | None:
    """[batch, grams] int32: how many times each row of `rows` ([grams, n]) occurs in each row of
    `x` ([batch, C]) with its items `distance` apart; None where no n-gram fits in C items."""
    batch, extent = shape
    length = rows.shape[1]
    starts = extent - (length - 1) * distance  # the positions where an n-gram fits
    if starts <= 0:
        return None
    match = None
    for k in range(length):
        first = k * distance
        view = call(
            "strided_slice", x, begin=(first,), end=(first + starts,), strides=(1,), axes=(1,)
        )
        view = call("reshape", view, newshape=(batch, starts, 1))
        # [batch, starts, 1] == [grams]: [batch, starts, grams]
        tokens = const(np.ascontiguousarray(rows[:, k]))
        equal = call("string.equal" if rows.dtype == object else "equal", view, tokens)
        match = equal if match is None else call("logical_and", match, equal)
    assert match is not None
    return call("sum", call("cast", match, dtype="int32"), axis=(1,), keepdims=False)


def _to_columns(counts: Expr, columns: np.ndarray, batch: int, width: int) -> Expr:
    """[batch, width] int32: the count of each n-gram (the columns of `counts`) in its output
    column `columns[i]`; columns that no n-gram names hold zero."""
    grams = len(columns)
    if len(set(columns.tolist())) < grams:  # several n-grams share a column: add their counts
        scatter = np.zeros((grams, width), dtype=np.int32)
        np.add.at(scatter, (np.arange(grams), columns), 1)
        return call("nn.matmul", counts, const(scatter))
    if grams == width and np.array_equal(columns, np.arange(width)):
        return counts
    source = np.full(width, grams, dtype=np.int64)  # `grams` names a column of zeros
    source[columns] = np.arange(grams)
    zeros = const(np.zeros((batch, 1), dtype=np.int32))
    padded = call("concatenate", tuple_of([counts, zeros]), axis=1)
    return call("take", padded, const(source), axis=1)


def _weights(node: OnnxNode, mode: str, entries: int, width: int) -> np.ndarray | None:
    """The float32 weight of each output column, or None where there is none (all ones)."""
    weights = node.attr("weights")
    if weights is None or len(weights) == 0 or mode == "TF":
        return None
    weights = np.asarray(weights, dtype=np.float32).reshape(-1)
    if len(weights) != entries:
        raise node.error(
            f"weights has {len(weights)} entries but ngram_indexes has {entries}: "
            "one weight per n-gram"
        )
    if len(weights) < width:
        raise node.error(
            f"weights has {len(weights)} entries but the output has {width} columns "
            "(max(ngram_indexes) + 1): onnx's reference weights output column j by weights[j]"
        )
    return weights[:width]


def _lengths(node: OnnxNode) -> tuple[str, int, int, int]:
    """mode, min_gram_length, max_gram_length and max_skip_count, checked."""
    mode = node.attr("mode")
    if mode not in _MODES:
        raise node.error(f"mode {mode!r} must be one of {list(_MODES)}")
    shortest, longest = int(node.attr("min_gram_length", 0)), int(node.attr("max_gram_length", 0))
    skips = int(node.attr("max_skip_count", 0))
    if not 1 <= shortest <= longest:
        raise node.error(
            f"min_gram_length {shortest} and max_gram_length {longest} must satisfy "
            "1 <= min_gram_length <= max_gram_length"
        )
    if skips < 0:
        raise node.error(f"max_skip_count {skips} is negative")
    return mode, shortest, longest, skips


def _counts(x: Expr, pool: _Pool, dtype: str, shape: tuple[int, int], skips: int) -> Expr | None:
    """[batch, width] int32: the count of each output column's n-grams in each row of `x`
    ([batch, C]); None where no n-gram can match (C too short, or no n-gram of a counted length
    that `dtype` can hold)."""
    parts, columns = [], []
    for length, (rows, targets) in sorted(pool.grams.items()):
        rows, targets = _within(rows, targets, dtype)
        if len(rows) == 0:
            continue
        # unigrams once; longer n-grams at every skip distance 1 .. max_skip_count + 1
        distances = [1] if length == 1 else range(1, skips + 2)
        total = None
        for distance in distances:
            found = _matches(x, rows, shape, distance)
            if found is None:
                break  # a longer distance fits no n-gram either
            total = found if total is None else call("add", total, found)
        if total is not None:
            parts.append(total)
            columns.append(targets)
    if not parts:
        return None
    counts = parts[0] if len(parts) == 1 else call("concatenate", tuple_of(parts), axis=1)
    return _to_columns(counts, np.concatenate(columns), shape[0], pool.width)


def _weighted(counts: Expr, mode: str, weights: np.ndarray | None) -> Expr:
    """float32 Y from the int32 counts: TF the counts; IDF the column's weight (or 1) where the
    count is positive, else 0; TFIDF the counts times the weights (rounded once, as the
    reference's float32(count * weight))."""
    if mode == "IDF":
        present = call("greater", counts, const(np.int32(0)))
        if weights is None:
            return call("cast", present, dtype="float32")
        return call("where", present, const(weights), const(np.float32(0)))
    y = call("cast", counts, dtype="float32")
    if mode == "TFIDF" and weights is not None:
        y = call("multiply", y, const(weights))
    return y


def convert_tfidf_vectorizer(node: OnnxNode) -> Expr | np.ndarray:
    """TfIdfVectorizer: the counts of the pool's n-grams in each row of X ([C] or [N, C]
    integers), as float32 [max(ngram_indexes) + 1] or [N, max(ngram_indexes) + 1], weighted by
    mode: TF the counts, IDF weights[j] where column j's count is positive (else 0), TFIDF the
    counts times weights."""
    mode, shortest, longest, skips = _lengths(node)
    pool = _pool(node, shortest, longest)
    weights = _weights(node, mode, len(_ints(node, "ngram_indexes")), pool.width)

    shape, dtype = node.shape(0), node.input(0).type.dtype
    if node.attr("pool_strings"):
        if dtype != "string":
            raise node.error(f"X has dtype {dtype}; a pool of strings needs string tokens")
    elif dtype not in ("int32", "int64"):
        raise node.error(f"X has dtype {dtype}; integer pools need int32 or int64 tokens")
    if len(shape) not in (1, 2) or (len(shape) == 2 and shape[0] == 0):
        raise node.error(f"X has shape {list(shape)}; it must be [C] or [N, C] with N > 0")
    batch, extent = (1, *shape) if len(shape) == 1 else shape
    out_shape = (pool.width,) if len(shape) == 1 else (batch, pool.width)
    x = node.expr(0) if len(shape) == 2 else call("reshape", node.expr(0), newshape=(1, extent))
    counts = _counts(x, pool, dtype, (batch, extent), skips)
    if counts is None:  # nothing can match (an empty input, or no n-gram of a counted length)
        return np.zeros(out_shape, dtype=np.float32)
    y = _weighted(counts, mode, weights)
    return y if len(shape) == 2 else call("reshape", y, newshape=out_shape)


TABLE: dict[str, tuple[Entry, ...]] = {
    "TfIdfVectorizer": every_opset(convert_tfidf_vectorizer, first=9),
}
