"""Quota admission with two GPU models, borrowing limits, cohort quota and priority budgets.

Fleets are 8-GPU nodes built with the test builders; tenants sit in one cohort ``c`` unless a
test says otherwise. Every expected number is worked out in the test's docstring from the
arithmetic in policies/quota.py's module docstring.
"""

from __future__ import annotations

from dataclasses import replace

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.model.tenancy import Cohort, FlavorQuota, PriorityClass, Tenancy, TenantQueue
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.quota import (
    AdmissionBook,
    QuotaAdmitter,
    QuotaLedger,
    binding_flavor,
    effective_priority,
    job_flavor,
    job_gpus_by_flavor,
    protected_running,
    with_flavor,
)
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

H, A = "H100-80GB", "A100-80GB"


def queue(name: str, *quotas: tuple[str, FlavorQuota], cohort: str | None = "c",
          budget: int | None = None) -> TenantQueue:
    return TenantQueue(name, cohort, tuple(quotas), priority_budget_gpus=budget)


def tenancy(*queues: TenantQueue, cohorts: tuple[Cohort, ...] = (Cohort("c"),)) -> Tenancy:
    return Tenancy(tenants=queues, cohorts=cohorts)


def two_models():
    """Node 0 is an A100 node, node 1 an H100 node (8 GPUs each): the placer, left alone, would
    take node 0 first, so a job that lands on node 1 was pinned there."""
    return fleet().leaves(1, nodes=1, gpu=A).leaves(1, nodes=1, gpu=H).build()


def run(ten: Tenancy, pending: list[Job], running: list[RunningJob] = (), flt=None, policy="tenancy"):
    table = NodeTable.from_fleet(flt if flt is not None else fleet().leaves(1, nodes=4).build())
    for rj in running:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in pending], profile(policy),
                                running=list(running), tenancy=ten))


def on_node(j: Job, node: int, flavor: str = H, start: float = 0.0) -> RunningJob:
    jj = with_flavor(j, flavor)
    ps = jj.pod_sets[0]
    return RunningJob(jj, start, tuple(PodBinding(j.id, ps.name, i, node, ps.request)
                                       for i in range(ps.replicas)))


def nodes_of(result, job_id: str) -> set[int]:
    return {b.node for b in result.bindings if b.job == job_id}


# -- flavour choice and pinning -----------------------------------------------------------------

def test_a_job_that_allows_any_model_is_pinned_to_its_tenants_first_flavour_with_nominal_room():
    """a has H100: 8 then A100: 8 (in that order). a1 (8 GPUs, any model) fits H100's nominal
    (0 + 8 ≤ 8) and is pinned there, so it lands on the H100 node 1 although node 0 comes first.
    a2 then finds H100 full (8 + 8 > 8) and A100 within nominal (0 + 8 ≤ 8): node 0."""
    ten = tenancy(queue("a", (H, FlavorQuota(8)), (A, FlavorQuota(8))))
    r = run(ten, [job("a1").tenant("a").gpus(8).build(), job("a2").tenant("a").gpus(8).build()],
            flt=two_models())
    assert sorted(r.started) == ["a1", "a2"]
    assert nodes_of(r, "a1") == {1} and nodes_of(r, "a2") == {0}


def test_one_gpu_pods_are_pinned_to_the_flavour_they_were_admitted_on():
    """As above with 1-GPU pods: a1 is within H100's nominal (1 ≤ 8), pinned there: node 1."""
    ten = tenancy(queue("a", (H, FlavorQuota(8)), (A, FlavorQuota(8))))
    r = run(ten, [job("a1").tenant("a").gpus(1).build()], flt=two_models())
    assert nodes_of(r, "a1") == {1}


def test_a_one_gpu_job_asking_for_a_model_is_admitted_on_that_flavour():
    """a has H100: 8 then A100: 8; a1 (1 GPU) asks A100: admitted on A100, node 0."""
    ten = tenancy(queue("a", (H, FlavorQuota(8)), (A, FlavorQuota(8))))
    r = run(ten, [job("a1").tenant("a").gpus(1).models(A).build()], flt=two_models())
    assert nodes_of(r, "a1") == {0}


def test_the_models_a_cpu_only_pod_set_names_do_not_restrict_the_jobs_flavours():
    """a has H100: 8 then A100: 8. a1 = one 8-GPU worker (any model) plus a CPU-only launcher
    naming A100: the worker may use either, so H100, the first flavour, is chosen: node 1."""
    ten = tenancy(queue("a", (H, FlavorQuota(8)), (A, FlavorQuota(8))))
    a1 = with_launcher(job("a1").tenant("a").gpus(8).build(), (A,))
    r = run(ten, [a1], flt=two_models())
    assert {b.node for b in r.bindings if b.pod_set == "worker"} == {1}


def test_a_job_pinned_to_a_model_is_charged_to_that_flavour_only():
    """a has H100: 8 then A100: 8. a1 asks A100 only: H100 is not a candidate, so it is admitted
    on A100 (node 0), and a2 (any model) still finds all of H100's nominal free (node 1)."""
    ten = tenancy(queue("a", (H, FlavorQuota(8)), (A, FlavorQuota(8))))
    r = run(ten, [job("a1").tenant("a").gpus(8).models(A).build(), job("a2").tenant("a").gpus(8).build()],
            flt=two_models())
    assert nodes_of(r, "a1") == {0} and nodes_of(r, "a2") == {1}


def test_a_job_pinned_to_a_model_its_tenant_has_no_quota_for_is_refused_with_that_reason():
    """a has quota for H100 only; a1 asks A100: no candidate flavour, NoQuotaForFlavor."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))))
    r = run(ten, [job("a1").tenant("a").gpus(8).models(A).build()], flt=two_models())
    assert r.started == ()
    st = r.statuses["a1"]
    assert st.code is StatusCode.NOT_ADMITTED and st.reasons[0] == "NoQuotaForFlavor"


def test_a_borrower_refused_on_its_first_flavour_borrows_on_the_next():
    """a: H100 nominal 8 with borrowing limit 0, A100 nominal 0; b: A100 nominal 8, idle. a runs
    8 H100 GPUs. a2 (8, any model) is within no nominal (H100 8 + 8 > 8, A100 0 + 8 > 0).
    H100: 8 + 8 > 8 + 0, ExceedsBorrowingLimit. A100: no limit, the cohort can lend b's 8:
    admitted as a borrower on A100, node 0."""
    ten = tenancy(queue("a", (H, FlavorQuota(8, borrowing_limit=0)), (A, FlavorQuota(0))),
                  queue("b", (A, FlavorQuota(8))))
    busy = on_node(job("a-run").tenant("a").gpus(8).build(), 1)
    r = run(ten, [job("a2").tenant("a").gpus(8).build()], [busy], flt=two_models())
    assert r.started == ("a2",) and nodes_of(r, "a2") == {0}


def test_when_no_flavour_admits_the_first_flavours_reason_is_reported():
    """As above but b has no A100 quota: A100's cohort can lend 0, WaitingForCohortCapacity; the
    first flavour's refusal, ExceedsBorrowingLimit, is the one reported."""
    ten = tenancy(queue("a", (H, FlavorQuota(8, borrowing_limit=0)), (A, FlavorQuota(0))),
                  queue("b", (A, FlavorQuota(0))))
    busy = on_node(job("a-run").tenant("a").gpus(8).build(), 1)
    r = run(ten, [job("a2").tenant("a").gpus(8).build()], [busy], flt=two_models())
    assert r.started == ()
    assert r.statuses["a2"].reasons[0] == "ExceedsBorrowingLimit"
    assert "uses 8 of 8 nominal H100-80GB GPUs; job needs 8; borrowing limit 0" in r.statuses["a2"].reasons[1]


def test_a_running_job_on_an_unpinned_or_multi_model_request_is_charged_to_the_default_flavour():
    """The ledger charges a binding to the one model it names; with none or several it charges
    the tenant's first flavour. a (H100 then A100) runs 8 GPUs asking any model and 4 asking
    A100 or H100 (in that order): H100 usage 8 + 4 = 12, A100 0. b's 8 pinned to A100 count
    as A100."""
    ten = tenancy(queue("a", (H, FlavorQuota(8)), (A, FlavorQuota(8))), queue("b", (A, FlavorQuota(8))))
    any_model = job("a-any").tenant("a").gpus(8).build()
    either = job("a-two").tenant("a").gpus(4).models(A, H).build()
    pinned = with_flavor(job("b1").tenant("b").gpus(8).build(), A)
    run_ = [RunningJob(j, 0.0, (PodBinding(j.id, "worker", 0, n, j.pod_sets[0].request),))
            for j, n in ((any_model, 0), (either, 1), (pinned, 2))]
    led = QuotaLedger.from_running(ten, run_)
    assert (led.used("a", H), led.used("a", A), led.used("b", A), led.used("b", H)) == (12, 0, 8, 0)


def with_launcher(j: Job, models: tuple[str, ...] = ()) -> Job:
    """``j`` plus a CPU-only launcher pod set (0 GPUs, 4 CPUs) that names ``models``."""
    return replace(j, pod_sets=(*j.pod_sets, PodSet("launcher", 1, PodRequest(0, 4.0, 0.0, models))))


def test_the_flavour_a_job_is_pinned_to_is_read_from_its_gpu_pod_sets_only():
    """One model named by every GPU pod set: that model (1-GPU pods count). A CPU-only pod set's
    models do not count; two models across the GPU pod sets, a pod set that allows two, or one
    that allows any: not pinned."""
    one = job("j").gpus(1).models(A).build()
    assert job_flavor(one) == A
    assert job_flavor(with_launcher(one, (H,))) == A
    assert job_flavor(with_launcher(one)) == A
    two_sets = replace(one, pod_sets=(*one.pod_sets, PodSet("w2", 1, PodRequest(2, gpu_models=(A,)))))
    assert job_flavor(two_sets) == A
    mixed = replace(one, pod_sets=(*one.pod_sets, PodSet("w2", 1, PodRequest(2, gpu_models=(H,)))))
    assert job_flavor(mixed) is None
    assert job_flavor(job("j").gpus(1).models(A, H).build()) is None
    assert job_flavor(job("j").gpus(1).build()) is None
    half = replace(one, pod_sets=(*one.pod_sets, PodSet("w2", 1, PodRequest(2))))
    assert job_flavor(half) is None


def test_pinning_a_job_to_a_flavour_leaves_its_cpu_only_pod_sets_free_to_go_anywhere():
    pinned = with_flavor(with_launcher(job("j").gpus(1).build()), H)
    assert [ps.request.gpu_models for ps in pinned.pod_sets] == [(H,), ()]


def test_a_binding_naming_no_single_model_has_no_flavour_unless_a_default_is_given():
    j = job("j").gpus(2).models(A, H).build()
    b = PodBinding(j.id, "worker", 0, 0, j.pod_sets[0].request)
    assert (binding_flavor(b), binding_flavor(b, H)) == ("", H)
    assert job_gpus_by_flavor([b, b]) == {"": 4}


def test_jobs_under_eviction_notice_can_be_left_out_of_the_ledger():
    """a runs 8 (a1) and 8 under notice (a2): 16 counted, or 8 when skipping the evicting."""
    ten = tenancy(queue("a", (H, FlavorQuota(16))))
    j1, j2 = job("a1").tenant("a").gpus(8).build(), job("a2").tenant("a").gpus(8).build()
    run_ = [replace(on_node(j2, 1), evicting=True), on_node(j1, 0)]
    assert QuotaLedger.from_running(ten, run_).used("a", H) == 16
    assert QuotaLedger.from_running(ten, run_, skip_evicting=True).used("a", H) == 8


# -- borrowing arithmetic ---------------------------------------------------------------------

def test_a_borrower_may_reach_exactly_nominal_plus_its_borrowing_limit():
    """a: nominal 8, borrowing limit 8; b: nominal 24, idle; 4 nodes. a0 fits nominal; a1 borrows
    to 16 = 8 + 8 (allowed: not > 16); a2 would reach 24 > 16: ExceedsBorrowingLimit, although
    the cohort still has 16 to lend."""
    ten = tenancy(queue("a", (H, FlavorQuota(8, borrowing_limit=8))), queue("b", (H, FlavorQuota(24))))
    r = run(ten, [job(f"a{i}").tenant("a").gpus(8).build() for i in range(3)])
    assert sorted(r.started) == ["a0", "a1"]
    st = r.statuses["a2"]
    assert st.reasons[0] == "ExceedsBorrowingLimit"
    assert st.reasons[1] == "tenant 'a' uses 16 of 8 nominal H100-80GB GPUs; job needs 8; borrowing limit 8"


def test_available_is_capped_by_the_borrowing_limit_and_by_what_the_cohort_has_left():
    """a: nominal 8, borrowing limit 4; b: nominal 16. No lending limits, so nothing is
    guaranteed (g = 0) and the cohort pool is 8 + 16 = 24.
    available(a) = min(pool − usage, 8 − used_a + 4):
      idle:           min(24, 12) = 12
      a uses 4:       min(20, 8)  =  8
      b uses 16:      min(8, 12)  =  8   (the pool binds, not the limit)
      a 4 and b 16:   min(4, 8)   =  4
    b has no limit: available(b) = pool − usage = 24, then 24 − 4 − 16 = 4."""
    ten = tenancy(queue("a", (H, FlavorQuota(8, borrowing_limit=4))), queue("b", (H, FlavorQuota(16))))
    led = QuotaLedger(ten)
    got = [led.available(("t", "a"), H), led.available(("t", "b"), H)]
    led.add("a", H, 4)
    got.append(led.available(("t", "a"), H))
    led.add("a", H, -4)
    led.add("b", H, 16)
    got.append(led.available(("t", "a"), H))
    led.add("a", H, 4)
    got += [led.available(("t", "a"), H), led.available(("t", "b"), H)]
    assert got == [12, 24, 8, 8, 4, 4]


def test_a_lenders_guaranteed_part_is_kept_for_it_and_never_lent():
    """b: nominal 16, lending limit 4, so g(b) = 16 − 4 = 12 stays b's; a: nominal 8. Pool =
    8 + (16 − 12) = 12. available(a) = 12 (8 own + 4 lent). b at 14: keeps max(0, 12 − 14) = 0,
    the pool holds max(0, 14 − 12) = 2 of it, so b gets 0 + (12 − 2) = 10 more (24 in all)."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(16, lending_limit=4))))
    led = QuotaLedger(ten)
    assert led.available(("t", "a"), H) == 12
    assert led.available(("t", "b"), H) == 24
    led.add("b", H, 14)
    assert led.available(("t", "b"), H) == 10
    assert led.available(("t", "a"), H) == 10
    led.add("b", H, -14)
    led.add("a", H, 12)
    # a's 12 all come from the pool (a has no guarantee); b keeps its 12.
    assert led.available(("t", "a"), H) == 0 and led.available(("t", "b"), H) == 12


def test_a_borrowing_limit_counts_from_what_the_tenant_put_in_the_pool_beyond_its_guarantee():
    """a: nominal 8, lending limit 2 (so g(a) = 6 stays a's), borrowing limit 4; b: nominal 16.
    Pool = (8 − 6) + 16 = 18. available(a) = max(0, 6 − used) + min(pool left,
    (8 − 6) − max(0, used − 6) + 4):
      idle:     6 + min(18, 2 − 0 + 4) = 6 + 6 = 12   (8 + 4: nominal plus the limit)
      used 10:  0 + min(18 − 4, 2 − 4 + 4) = 2        (10 + 2 = 12 again)"""
    ten = tenancy(queue("a", (H, FlavorQuota(8, borrowing_limit=4, lending_limit=2))),
                  queue("b", (H, FlavorQuota(16))))
    led = QuotaLedger(ten)
    assert led.available(("t", "a"), H) == 12
    led.add("a", H, 10)
    assert led.available(("t", "a"), H) == 2


def test_a_lending_limit_equal_to_the_nominal_quota_lends_all_of_it():
    """b: nominal 16, lending limit 16: g(b) = max(0, 16 − 16) = 0, as with no limit. a (8) can
    reach the whole pool 8 + 16 = 24."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(16, lending_limit=16))))
    assert QuotaLedger(ten).available(("t", "a"), H) == 24


def test_a_tenant_without_a_cohort_has_exactly_its_own_quota_left():
    """solo (nominal 8, no cohort) using 3 has 8 − 3 = 5 left; a tenant with no queue has 0."""
    ten = tenancy(queue("solo", (H, FlavorQuota(8)), cohort=None), queue("a", (H, FlavorQuota(8))))
    led = QuotaLedger(ten)
    led.add("solo", H, 3)
    assert led.available(("t", "solo"), H) == 5
    assert led.available(("t", "nobody"), H) == 0


def test_running_jobs_of_tenants_without_quota_are_charged_to_no_flavour():
    """z has a queue but no quotas, y has no queue at all: their running GPUs are charged to the
    flavour "" (no default flavour exists), and nothing fails."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("z"))
    z1, y1 = job("z1").tenant("z").gpus(8).build(), job("y1").tenant("y").gpus(4).build()
    run_ = [RunningJob(j, 0.0, (PodBinding(j.id, "worker", 0, n, j.pod_sets[0].request),))
            for j, n in ((z1, 0), (y1, 1))]
    led = QuotaLedger.from_running(ten, run_)
    assert (led.used("z", ""), led.used("y", ""), led.used("z", H)) == (8, 4, 0)


def test_a_cohorts_own_nominal_quota_adds_capacity_its_members_can_borrow():
    """Cohort c owns 8 H100 GPUs itself; a: 8, b: 16. Pool = 8 + 8 + 16 = 32 = available(a)."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(16))),
                  cohorts=(Cohort("c", quotas=((H, FlavorQuota(8)),)),))
    assert QuotaLedger(ten).available(("t", "a"), H) == 32


def test_a_copied_ledger_charges_independently_of_the_original():
    """Preemption tries victim sets on copies: charging a copy must leave the original alone."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(8))))
    led = QuotaLedger(ten)
    led.add("a", H, 4)
    trial = led.copy()
    trial.add("a", H, 4)
    assert (led.used("a", H), trial.used("a", H)) == (4, 8)
    assert (led.available(("t", "a"), H), trial.available(("t", "a"), H)) == (12, 8)


# -- tiers and odd tenants --------------------------------------------------------------------

def test_a_job_within_nominal_is_admitted_before_an_earlier_borrower_takes_the_capacity():
    """2 nodes; a and b nominal 8 each; b runs 8 (at nominal). b2 is first in the queue and would
    borrow; a1 comes second within a's guarantee. Tier 1 charges a1 (a at 8 ≤ 8) first, so the
    pool is 16 − 16 = 0 when b2 asks: b2 waits for cohort capacity and a1 starts."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(8))))
    busy = on_node(job("b1").tenant("b").gpus(8).build(), 0)
    r = run(ten, [job("b2").tenant("b").gpus(8).build(), job("a1").tenant("a").gpus(8).at(1).build()],
            [busy], flt=fleet().leaves(1, nodes=2).build())
    assert r.started == ("a1",)
    assert r.statuses["b2"].reasons[0] == "WaitingForCohortCapacity"
    assert r.statuses["b2"].reasons[1].endswith("cohort 'c' can lend 0 now")


def test_a_job_of_a_tenant_without_a_queue_is_refused_as_unknown():
    ten = tenancy(queue("a", (H, FlavorQuota(8))))
    r = run(ten, [job("z1").tenant("z").gpus(1).build()])
    assert r.started == ()
    assert r.statuses["z1"].reasons == ("UnknownTenant", "tenant 'z' has no queue in the tenancy config")


def test_a_tenant_without_a_cohort_is_told_it_has_none_to_borrow_from():
    ten = tenancy(queue("a", (H, FlavorQuota(8)), cohort=None), cohorts=())
    r = run(ten, [job("a1").tenant("a").gpus(8).gang(2).build()])
    assert r.statuses["a1"].reasons == (
        "ExceedsNominalQuota",
        "tenant 'a' uses 0 of 8 nominal H100-80GB GPUs; job needs 16; no cohort to borrow from")


def test_a_borrower_is_told_how_much_the_cohort_can_lend_now():
    """a and b nominal 8; a runs 8, b runs 4: the pool of 16 has 16 − 12 = 4 left. a2 asks 8 > 4."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(8))))
    busy = [on_node(job("a1").tenant("a").gpus(8).build(), 0),
            on_node(job("b1").tenant("b").gpus(4).build(), 1)]
    r = run(ten, [job("a2").tenant("a").gpus(8).build()], busy)
    assert r.statuses["a2"].reasons[1] == (
        "tenant 'a' uses 8 of 8 nominal H100-80GB GPUs; job needs 8; cohort 'c' can lend 4 now")


def test_a_tenant_at_exactly_its_nominal_quota_is_within_it():
    ten = tenancy(queue("a", (H, FlavorQuota(8))))
    led = QuotaLedger(ten)
    led.add("a", H, 8)
    assert led.within_nominal("a", H) and not led.within_nominal("a", H, 1)
    assert not led.within_nominal("nobody", H)


def test_a_cpu_only_job_is_admitted_for_a_tenant_without_gpu_quota():
    """z has a queue but no GPU quota: a 1-GPU job has no flavour to be charged to; a 0-GPU job
    behind it asks nothing of the quota and starts."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("z"))
    r = run(ten, [job("gpu").tenant("z").gpus(1).build(),
                  job("cpu").tenant("z").gpus(0).cpus(4).at(1).build()])
    assert r.started == ("cpu",)
    assert r.statuses["gpu"].reasons == ("NoQuotaForFlavor",
                                         "tenant 'z' has no quota for the GPU models the job allows")


def test_a_cpu_bound_raised_job_of_a_tenant_without_gpu_quota_evicts_its_own_lower_cpu_job():
    """One node of 224 CPUs. z has a queue and no GPU quota; it runs z-low (0 GPUs, 200 CPUs,
    priority 0). z-hi (0 GPUs, 100 CPUs, priority 10) is admitted (it asks no GPU quota) but
    24 CPUs are free: its own lower-priority z-low is the victim."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("z"))
    low = job("z-low").tenant("z").gpus(0).cpus(200).build()
    busy = [RunningJob(low, 0.0, (PodBinding(low.id, "worker", 0, 0, low.pod_sets[0].request),))]
    r = run(ten, [job("z-hi").tenant("z").gpus(0).cpus(100).priority(10).build()], busy,
            flt=fleet().leaves(1, nodes=1).build())
    assert [(p.job, p.for_job) for p in r.preemptions] == [("z-low", "z-hi")]


def test_a_cpu_only_job_of_a_tenant_above_its_nominal_quota_is_still_admitted():
    """a (nominal 8) already borrows: it runs 16. A 0-GPU job adds nothing to that: admitted."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(24))))
    busy = [on_node(job(f"a{i}").tenant("a").gpus(8).build(), i) for i in range(2)]
    r = run(ten, [job("cpu").tenant("a").gpus(0).cpus(4).build()], busy)
    assert r.started == ("cpu",)


# -- priority budget --------------------------------------------------------------------------

def budget_tenancy(budget: int | None, nominal: int = 8) -> Tenancy:
    return Tenancy(tenants=(queue("a", (H, FlavorQuota(nominal)), cohort=None, budget=budget),),
                   priority_classes=(PriorityClass("normal", 0), PriorityClass("high", 10)))


def test_a_raised_job_within_the_priority_budget_preempts_the_tenants_own_lower_work():
    """One node; a (nominal 8, no cohort) runs a-low (8 GPUs, priority 0). a-hi (8 GPUs,
    priority 10) exceeds nominal (8 + 8 > 8); within a budget of 8 it keeps priority 10 and
    evicts a-low. With budget 4 it is admitted as the default class (8 > 4), priority 0, and
    a-low (0, not < 0) is not its victim; with no budget at all, priority 10 stands."""
    low = on_node(job("a-low").tenant("a").gpus(8).build(), 0)
    hi = job("a-hi").tenant("a").gpus(8).priority(10).build()
    flt = fleet().leaves(1, nodes=1).build()
    for budget, victims in ((8, ["a-low"]), (4, []), (None, ["a-low"])):
        r = run(budget_tenancy(budget), [hi], [low], flt=flt)
        assert [p.job for p in r.preemptions] == victims, budget


def test_running_raised_jobs_claim_the_priority_budget_in_start_order():
    """Budget 8: a-old (8 GPUs, priority 10, started at 0) claims it; a-new (8, started at 5)
    would reach 16 > 8 and is not protected; a-low (priority 0) never counts."""
    ten = budget_tenancy(8)
    old = on_node(job("a-old").tenant("a").gpus(8).priority(10).build(), 0, start=0.0)
    new = on_node(job("a-new").tenant("a").gpus(8).priority(10).build(), 1, start=5.0)
    low = on_node(job("a-low").tenant("a").gpus(8).build(), 2, start=1.0)
    assert protected_running(ten, [new, low, old]) == {"a-old"}
    assert protected_running(budget_tenancy(16), [new, low, old]) == {"a-old", "a-new"}


def test_a_raised_job_pending_beyond_the_budget_left_by_running_ones_is_demoted():
    """a: nominal 16, no cohort, 2 nodes. a-old (8 GPUs, priority 10) runs on node 0 and holds a
    budget of 8; a-low (priority 0) runs on node 1. a-hi (8 GPUs, priority 10) exceeds nominal
    (16 + 8 > 16) and needs 8 GPUs freed. Budget 8: 8 + 8 > 8 demotes it to priority 0, a-low is
    not lower than that, nothing is preempted. Budget 16: 8 + 8 ≤ 16, it keeps priority 10 and
    evicts a-low (a back at 8 + 8 = 16 ≤ 16)."""
    ten = budget_tenancy(8, nominal=16)
    old = on_node(job("a-old").tenant("a").gpus(8).priority(10).build(), 0, start=0.0)
    low = on_node(job("a-low").tenant("a").gpus(8).build(), 1, start=1.0)
    hi = job("a-hi").tenant("a").gpus(8).priority(10).build()
    r = run(ten, [hi], [old, low], flt=fleet().leaves(1, nodes=2).build())
    assert r.preemptions == ()
    r = run(budget_tenancy(16, nominal=16), [hi], [old, low], flt=fleet().leaves(1, nodes=2).build())
    assert [p.job for p in r.preemptions] == ["a-low"]


def test_static_partitions_say_why_a_job_the_cohort_could_serve_waits():
    """static-partitions: a (nominal 8) runs 8; the cohort could lend b's idle 8, but partitions
    do not borrow."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(8))))
    busy = [on_node(job("a1").tenant("a").gpus(8).build(), 0)]
    r = run(ten, [job("a2").tenant("a").gpus(8).build()], busy, policy="static-partitions")
    assert r.started == ()
    assert r.statuses["a2"].reasons == (
        "ExceedsNominalQuota",
        "tenant 'a' would exceed its nominal H100-80GB quota; static partitions do not borrow")


def test_refusals_name_the_admitter_that_made_them():
    ten = tenancy(queue("a", (H, FlavorQuota(8)), cohort=None), cohorts=())
    big = [job("a1").tenant("a").gpus(8).gang(2).build()]
    assert run(ten, big).statuses["a1"].policy == "quota"
    assert run(ten, big, policy="static-partitions").statuses["a1"].policy == "static-quota"


def test_borrowers_are_admitted_in_fair_share_order_not_submission_order():
    """3 nodes; a and b nominal 4, c nominal 16 (pool 24). a runs 8 (4 borrowed) on node 0, c
    runs 8 on node 1: 24 − 16 = 8 left to lend. a2 (8, submitted first) and b1 (8) both borrow;
    only one fits the pool. Dominant-resource fair share puts b (0 GPUs held) before a (8): b1
    is admitted and starts on node 2, a2 waits for cohort capacity."""
    ten = tenancy(queue("a", (H, FlavorQuota(4))), queue("b", (H, FlavorQuota(4))),
                  queue("c", (H, FlavorQuota(16))))
    busy = [on_node(job("a1").tenant("a").gpus(8).build(), 0),
            on_node(job("c1").tenant("c").gpus(8).build(), 1)]
    r = run(ten, [job("a2").tenant("a").gpus(8).build(), job("b1").tenant("b").gpus(8).at(1).build()], busy,
            flt=fleet().leaves(1, nodes=3).build())
    assert r.started == ("b1",)
    assert r.statuses["a2"].reasons[0] == "WaitingForCohortCapacity"


def test_a_quota_admitter_given_no_order_admits_by_priority_then_submission():
    """a (nominal 8, no cohort) on 2 nodes: a-first (8, priority 0) came first, a-urgent (8,
    priority 5) second. Priority order charges a-urgent to the quota first; a-first then exceeds
    the nominal 8."""
    ten = tenancy(queue("a", (H, FlavorQuota(8)), cohort=None), cohorts=())
    prof = Profile("quota-only", placer=GangBestFit(), admitter=QuotaAdmitter())
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    pending = [job("a-first").tenant("a").gpus(8).build(),
               job("a-urgent").tenant("a").gpus(8).priority(5).at(1).build()]
    r = run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in pending], prof, tenancy=ten))
    assert r.started == ("a-urgent",)
    assert r.statuses["a-first"].reasons[0] == "ExceedsNominalQuota"


def test_a_raised_class_counts_only_when_honoured_and_lower_classes_keep_their_priority():
    """Default priority 0. A raised job (10) keeps 10 when protected, drops to 0 when not; a job
    below the default (−5) is never raised and keeps −5 either way."""
    ten = budget_tenancy(8)
    hi = job("hi").tenant("a").gpus(8).priority(10).build()
    low = job("low").tenant("a").gpus(8).priority(-5).build()
    assert effective_priority(ten, hi, {"hi"}) == 10
    assert effective_priority(ten, hi, set()) == 0
    assert effective_priority(ten, low, set()) == -5


def test_an_admission_book_starts_empty():
    assert AdmissionBook().records == [] and AdmissionBook().by_id() == {}


def test_raised_jobs_pending_in_one_cycle_share_the_priority_budget_in_order():
    """One node; a (nominal 6, no cohort, budget 4) runs three 2-GPU jobs at priority 0 (6 GPUs).
    hi1, hi2, hi3 (2 GPUs each, priority 10) all exceed nominal and need one low job out each.
    hi1 and hi2 fit the budget (2, then 2 + 2 = 4 ≤ 4) and keep priority 10; hi3 would reach 6 >
    4 and is admitted as priority 0, so it preempts nothing: two notices, for hi1 and hi2."""
    ten = budget_tenancy(4, nominal=6)
    low = [on_node(job(f"low{i}").tenant("a").gpus(2).build(), 0, start=float(i)) for i in range(3)]
    hi = [job(f"hi{i}").tenant("a").gpus(2).priority(10).at(i).build() for i in (1, 2, 3)]
    r = run(ten, hi, low, flt=fleet().leaves(1, nodes=1).build())
    assert sorted(p.for_job for p in r.preemptions) == ["hi1", "hi2"]


def test_a_job_admitted_within_its_guarantee_but_blocked_by_borrowers_gets_a_reclaim():
    """2 nodes, a and b nominal 8; b runs 16 (8 borrowed). a1 (8) is within a's guarantee and
    admitted, but no node is free: one of b's jobs is reclaimed for it."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(8))))
    busy = [on_node(job(f"b{i}").tenant("b").gpus(8).build(), i, start=float(i)) for i in range(2)]
    r = run(ten, [job("a1").tenant("a").gpus(8).build()], busy, flt=fleet().leaves(1, nodes=2).build())
    assert [p.for_job for p in r.preemptions] == ["a1"]


def test_a_guaranteed_job_is_placed_before_a_borrower_fair_share_would_put_first():
    """2 nodes; a nominal 16 runs a0 (8) on node 0; b nominal 0; c nominal 16, idle (pool 32).
    a1 (8) is within a's guarantee (8 + 8 ≤ 16); b1 (8) borrows (pool 32 − 16 = 16 ≥ 8). Both are
    admitted, one node is free. Fair share alone would favour b (0 GPUs held against a's 8);
    guaranteed jobs go first: a1 starts, b1 waits."""
    ten = tenancy(queue("a", (H, FlavorQuota(16))), queue("b", (H, FlavorQuota(0))),
                  queue("c", (H, FlavorQuota(16))))
    busy = [on_node(job("a0").tenant("a").gpus(8).build(), 0)]
    r = run(ten, [job("b1").tenant("b").gpus(8).build(), job("a1").tenant("a").gpus(8).at(1).build()], busy,
            flt=fleet().leaves(1, nodes=2).build())
    assert r.started == ("a1",)


def test_a_refused_job_seeks_its_own_victims_on_its_first_flavour():
    """Node 0 A100, node 1 H100. a (H100: 8 then A100: 8, no cohort) runs a-h (8 H100 GPUs,
    started 9,000 s ago) and a-a (8 A100 GPUs, started 100 s ago, cheaper to evict). a-hi (8, any
    model, priority 10) exceeds both nominals; its victims are sought on H100, its first
    flavour: a-h is evicted, not the cheaper a-a."""
    ten = tenancy(queue("a", (H, FlavorQuota(8)), (A, FlavorQuota(8)), cohort=None), cohorts=())
    busy = [on_node(job("a-h").tenant("a").gpus(8).runs(90_000).build(), 1, H, start=1_000.0),
            on_node(job("a-a").tenant("a").gpus(8).runs(90_000).build(), 0, A, start=9_900.0)]
    table = NodeTable.from_fleet(two_models())
    for rj in busy:
        for b in rj.bindings:
            table.take(b.node, b.request)
    hi = job("a-hi").tenant("a").gpus(8).priority(10).build()
    r = run_cycle(CycleInput(10_000.0, table, [PendingJob(hi)], profile("tenancy"), running=busy,
                             tenancy=ten))
    assert [(p.job, p.for_job) for p in r.preemptions] == [("a-h", "a-hi")]


def test_a_job_exactly_within_its_nominal_quota_that_borrowers_hold_waits_for_the_reclaim():
    """Two 8-GPU nodes; a and b have 8 nominal H100 GPUs each in cohort c. b runs 2 × 8 = 16: it
    borrows all of a's 8. a1 (a, 8 GPUs): 0 + 8 = 8 ≤ 8, exactly its nominal quota, but the
    cohort has 16 − 16 = 0 GPUs left, so admission refuses it for now and says the borrowers hold
    its quota and are being reclaimed (not that the cohort has too little to lend); preemption
    then evicts b0 for it."""
    ten = tenancy(queue("a", (H, FlavorQuota(8))), queue("b", (H, FlavorQuota(8))))
    b_jobs = [on_node(job(f"b{i}").tenant("b").gpus(8).build(), i) for i in range(2)]
    r = run(ten, [job("a1").tenant("a").gpus(8).build()], b_jobs, fleet().leaves(1, nodes=2).build())
    assert r.statuses["a1"].reasons[:2] == (
        "WaitingForCohortCapacity",
        "tenant 'a' uses 0 of 8 nominal H100-80GB GPUs; job needs 8; borrowers in cohort 'c' hold "
        "its nominal quota (0 available now): reclaiming it")
    assert [(p.job, p.for_job) for p in r.preemptions] == [("b0", "a1")]
