"""The cycle's generator is made from ``CycleInput.seed`` on first use (engine/types.py): a profile
that draws nothing pays nothing, and one that draws sees the stream ``default_rng(seed)`` gives."""

from __future__ import annotations

import numpy as np

from gpufleet.engine.types import CycleContext
from gpufleet.policies.registry import profile


def test_a_seed_gives_the_stream_of_default_rng_with_that_seed_made_once():
    ctx = CycleContext(0.0, profile("topology-blind"), 7)
    assert ctx._rng == 7  # nothing made until asked
    draws = ctx.rng.integers(0, 1000, 5).tolist()
    assert draws == np.random.default_rng(7).integers(0, 1000, 5).tolist()
    assert ctx.rng is ctx.rng


def test_a_generator_given_is_the_one_used():
    g = np.random.default_rng(3)
    assert CycleContext(0.0, profile("gang-bestfit"), g).rng is g
