"""The random state a compiled model gives each call (tessel/graph/op/random.py): a uint64 pair,
a nonce drawn when the model loads (or set by `seed_random`) and the call's number, counted up."""

from __future__ import annotations

import itertools
import os

import numpy as np


class RandomState:
    """A model's nonce and call counter; `next()` is the state of the next call."""

    def __init__(self) -> None:
        self.seed(int.from_bytes(os.urandom(8), "little"))

    def seed(self, nonce: int) -> None:
        """Start afresh from `nonce`: the next call is call 0."""
        self.nonce = int(nonce) & 0xFFFFFFFFFFFFFFFF
        self._calls = itertools.count()

    def next(self) -> np.ndarray:
        """The state of the next call (calls from several threads each get their own)."""
        return np.array([self.nonce, next(self._calls)], np.uint64)
