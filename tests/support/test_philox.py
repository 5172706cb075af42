"""Philox4x32-10 in NumPy (tessel/support/philox.py) against Random123's known-answer vectors, and
the uniform and normal draws' ranges and moments."""

import numpy as np
import pytest

from tessel.support import philox


@pytest.mark.parametrize(
    ("counter", "key", "expected"),
    [  # Random123's kat_vectors for philox4x32_10: counter words, key words, result words
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        (
            (0xFFFFFFFF,) * 4,
            (0xFFFFFFFF,) * 2,
            (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
        ),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_philox_gives_random123s_known_answers(counter, key, expected):
    index = np.array([counter[0] | counter[1] << 32], dtype=np.uint64)
    call = counter[2] | counter[3] << 32
    words = philox.philox(key[0] | key[1] << 32, call, index)
    assert tuple(int(w[0]) for w in words) == expected


def test_uniform_draws_lie_in_the_unit_interval_with_its_moments():
    u = philox.uniform(philox.mix_key(7, 0), 0, np.arange(200_000))
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002


def test_normal_draws_have_zero_mean_and_unit_deviation():
    z = philox.normal(philox.mix_key(7, 1), 3, np.arange(200_000))
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01


def test_streams_and_calls_are_unrelated():
    a = philox.uniform(philox.mix_key(1, 0), 0, np.arange(1000))
    b = philox.uniform(philox.mix_key(1, 1), 0, np.arange(1000))
    c = philox.uniform(philox.mix_key(1, 0), 1, np.arange(1000))
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.1 and abs(np.corrcoef(a, c)[0, 1]) < 0.1
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
