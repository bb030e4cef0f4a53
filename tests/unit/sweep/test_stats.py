import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.sweep.stats import holm, paired_tests, t_interval


def test_t_interval_of_one_to_five_is_three_plus_or_minus_1_963():
    """x = 1..5: mean 3, s = √(10/4) = 1.5811, t(0.975, 4) = 2.7764 (Student's table),
    half-width = 2.7764 × 1.5811 / √5 = 1.9632."""
    ci = t_interval([1, 2, 3, 4, 5])
    assert ci.mean == 3.0
    assert math.isclose(ci.half_width, 1.9632, abs_tol=1e-4)
    assert ci.n == 5


def test_a_single_seed_has_no_spread_to_estimate():
    ci = t_interval([7.0])
    assert (ci.mean, ci.half_width, ci.n) == (7.0, 0.0, 1)


def test_nan_values_are_left_out_of_the_interval():
    assert t_interval([1.0, float("nan"), 3.0]).n == 2


def test_paired_test_sees_a_consistent_difference_that_the_intervals_hide():
    """a = 10, 20, 30, 40, 50 (seed-to-seed spread dominates); b = a − d with d = 0.5, 1.5, 1, 1, 1.
    d̄ = 1, s_d = √((0.25 + 0.25) / 4) = 0.35355, t = 1 / (0.35355 / √5) = 6.325 with 4 degrees of
    freedom: two-sided p = 0.0032 (Student's t table: t = 6.325, df 4). The two 95% intervals,
    30 ± 19.6 and 29 ± 19.6, overlap almost entirely."""
    a = [10.0, 20.0, 30.0, 40.0, 50.0]
    b = [x - d for x, d in zip(a, [0.5, 1.5, 1.0, 1.0, 1.0], strict=True)]
    (t,) = paired_tests({"a": dict(enumerate(a)), "b": dict(enumerate(b))})
    assert math.isclose(t.mean_diff, 1.0)
    assert math.isclose(t.p, 0.0032, abs_tol=2e-4)
    assert t.significant
    assert t_interval(a).high > t_interval(b).low


def test_a_difference_identical_on_every_seed_is_significant_and_no_difference_is_not():
    same = {"a": {1: 5.0, 2: 6.0, 3: 7.0}, "b": {1: 4.0, 2: 5.0, 3: 6.0}, "c": {1: 5.0, 2: 6.0, 3: 7.0}}
    tests = {(t.a, t.b): t for t in paired_tests(same)}
    assert tests[("a", "b")].p == 0.0 and tests[("a", "b")].significant
    assert tests[("a", "c")].p == 1.0 and not tests[("a", "c")].significant


def test_only_the_seeds_both_policies_ran_are_paired():
    (t,) = paired_tests({"a": {1: 1.0, 2: 2.0, 3: 9.0}, "b": {1: 0.0, 2: 1.0}})
    assert t.n == 2 and t.mean_diff == 1.0


def test_holm_multiplies_the_ith_smallest_by_m_minus_i_and_keeps_the_order():
    """p = 0.01, 0.04, 0.03 (m = 3): sorted 0.01 × 3 = 0.03, 0.03 × 2 = 0.06, 0.04 × 1 = 0.04 → raised
    to 0.06 to stay non-decreasing. In the input order: 0.03, 0.06, 0.06."""
    assert np.allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_never_lowers_a_p_value_and_never_exceeds_one(ps):
    adj = holm(ps)
    assert all(p <= q + 1e-12 <= 1 + 1e-12 for p, q in zip(ps, adj, strict=True))
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    assert all(adj[i] <= adj[j] + 1e-12 for i, j in zip(order, order[1:], strict=False))
