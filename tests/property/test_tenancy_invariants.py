"""Tenancy invariants over random workloads (hypothesis).

- no tenant ever runs more than nominal + borrowing limit;
- borrowers together never hold more than the lenders may lend (lending limits hold);
- a tenant under its guarantee gets it back within one cycle plus the grace period;
- no gang is ever partially evicted: a preemption frees every pod of its victim;
- no GPU slot is ever negative in a Plan (preemption never counts a GPU twice).
"""

from contextlib import ExitStack, contextmanager
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine.plan import Plan
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.usage import UsageTracker
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"
NODES = 6  # 48 GPUs = Σ nominal


def usage_timeline(r):
    """Per tenant, GPUs held after every event, replayed from the log."""
    held: dict[str, int] = {}
    peaks: dict[str, int] = {}
    snapshots = []
    for t, kind, jid, _ in r.recorder.log:
        j = r.jobs[jid]
        if kind == "start":
            held[j.tenant] = held.get(j.tenant, 0) + j.total_gpus
        elif kind in ("finish", "preempt"):
            held[j.tenant] -= j.total_gpus
        peaks[j.tenant] = max(peaks.get(j.tenant, 0), held.get(j.tenant, 0))
        snapshots.append((t, dict(held)))
    return peaks, snapshots


jobs_st = st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 3), st.sampled_from([1, 8]),
                             st.integers(0, 7200), st.integers(600, 7200)), min_size=1, max_size=20)


def tenancy(borrow, lend, grace=0.0):
    return Tenancy(tenants=(TenantQueue("a", "c", ((F, FlavorQuota(16, borrow, None)),)),
                            TenantQueue("b", "c", ((F, FlavorQuota(16, None, lend)),)),
                            TenantQueue("c", "c", ((F, FlavorQuota(16, None, lend)),))),
                   cohorts=(Cohort("c"),), grace_s=grace)


def build(rows):
    return [job(f"j{i}").tenant(t).gpus(g).gang(r if g == 8 else 1).at(s).runs(d)
            .checkpoints(900, restart_s=30).build() for i, (t, r, g, s, d) in enumerate(rows)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_st, borrow=st.sampled_from([0, 8, 16, None]), lend=st.sampled_from([0, 8, None]))
def test_no_tenant_exceeds_nominal_plus_borrowing_and_lending_limits_hold(rows, borrow, lend):
    ten = tenancy(borrow, lend)
    r = simulate(fleet().leaves(1, nodes=NODES).build(), build(rows), profile("tenancy"), tenancy=ten,
                 usage_tracker=UsageTracker(3600))
    peaks, snaps = usage_timeline(r)
    assert peaks.get("a", 0) <= 16 + (borrow if borrow is not None else 32)
    # The cohort's pool is what its members may lend: a all 16 (no limit), b and c ``lend`` each.
    pool = 16 + 2 * (lend if lend is not None else 16)
    for _, held in snaps:
        borrowed = sum(max(0, held.get(t, 0) - 16) for t in "abc")
        assert borrowed <= pool


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gangs=st.lists(st.integers(1, 3), min_size=2, max_size=6), want=st.integers(1, 2),
       grace=st.sampled_from([0.0, 30.0, 120.0]), at=st.integers(100, 5000),
       cycle_s=st.sampled_from([0.0, 60.0]))
def test_a_tenant_under_its_guarantee_gets_it_back_within_a_cycle_plus_the_grace(gangs, want, grace, at,
                                                                                 cycle_s):
    """b fills the whole fleet with borrowed gangs; a then asks for ≤ 16 GPUs (its nominal).

    The notice goes out at the first cycle after a's arrival (≤ one cadence c later); the victims
    leave after the grace g; a starts at the first cycle after that. Event-driven (c = 0): at
    arrival + g exactly. On a cadence: by arrival + c + g + c (the eviction waits for a boundary
    like every other event)."""
    gangs = gangs + [1] * max(0, NODES - sum(gangs))
    b_jobs = [job(f"b{i}").tenant("b").gpus(8).gang(n).runs(50_000).checkpoints(600, 60, 30).build()
              for i, n in enumerate(gangs)]
    a_job = job("a1").tenant("a").gpus(8).gang(want).at(at).runs(600).build()
    r = simulate(fleet().leaves(1, nodes=NODES).build(), [*b_jobs, a_job], profile("tenancy"),
                 tenancy=tenancy(None, None, grace), cycle_interval_s=cycle_s,
                 usage_tracker=UsageTracker(3600))
    notices = [t for t, kind, _, detail in r.recorder.log if kind == "preempt-notice" and "a1" in detail]
    assert r.starts["a1"] <= at + cycle_s or notices[0] <= at + cycle_s
    assert r.starts["a1"] <= at + cycle_s + grace + cycle_s


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_st, policy=st.sampled_from(["tenancy", "tenancy-easy", "kueue"]))
def test_no_gang_is_ever_partially_evicted(rows, policy):
    """The simulator samples the GPUs actually bound on its node table after every event time.
    Replaying the log with whole gangs (a start binds all of a job's GPUs, a preemption or a
    finish frees all of them) must give exactly that count at every sample: were a gang evicted
    in part, the table would keep the rest bound and the two would differ."""
    jobs = build(rows)
    r = simulate(fleet().leaves(1, nodes=NODES).build(), jobs, profile(policy),
                 tenancy=tenancy(None, None, 30.0), usage_tracker=UsageTracker(3600))
    size = {j.id: j.total_gpus for j in jobs}
    held, running, i = 0, set(), 0
    log = r.recorder.log
    for t, allocated in zip(r.recorder.t, r.recorder.allocated, strict=True):
        while i < len(log) and log[i][0] <= t:
            _, kind, jid, _ = log[i]
            if kind == "start":
                assert jid not in running
                running.add(jid)
                held += size[jid]
            elif kind in ("preempt", "finish"):
                assert jid in running
                running.discard(jid)
                held -= size[jid]
            i += 1
        assert allocated == held


@contextmanager
def plans_checked(seen: list[int]):
    """Check every Plan after each bind, release and rollback: free GPUs per node stay in
    [0, total] (a negative count means a GPU is counted for two jobs)."""
    real = {name: getattr(Plan, name) for name in ("bind", "release", "rollback")}

    def checked(name):
        def op(self, *args, **kwargs):
            real[name](self, *args, **kwargs)
            free, total = self.table.gpu_free, self.table.gpu_total
            assert (free >= 0).all() and (free <= total).all(), (name, free.tolist())
            seen.append(1)
        return op

    with ExitStack() as stack:
        for name in real:
            stack.enter_context(patch.object(Plan, name, checked(name)))
        yield


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_st, grace=st.sampled_from([0.0, 30.0]),
       policy=st.sampled_from(["tenancy", "tenancy-easy", "tenancy-naive-victims", "kueue"]))
def test_no_gpu_slot_is_ever_negative_in_a_plan(rows, grace, policy):
    """Whatever admission, placement, backfill and preemption search do on a cycle's Plan, no
    node ever shows fewer than 0 or more than its GPUs free: several beneficiaries in one cycle
    never count the same GPUs twice."""
    seen: list[int] = []
    with plans_checked(seen):
        simulate(fleet().leaves(1, nodes=NODES).build(), build(rows), profile(policy),
                 tenancy=tenancy(None, None, grace), usage_tracker=UsageTracker(3600))
    assert seen
