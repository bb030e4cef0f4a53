"""Five ways to game a fair-share fleet, each run four times: the gamer honest or gaming, under a
naive policy and under ours. The gamer's *gain* is (its outcome gaming) − (its outcome honest)
under the same policy; a working defence makes the gain vanish or flags the tenant.

Fleet: 6 nodes × 8 H100 = 48 GPUs. Tenants A (the gamer), B and C, nominal 16 GPUs each in one
cohort, grace 60 s. Every case states its outcome measure and its naive policy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from gpufleet.model.job import Job
from gpufleet.model.tenancy import Cohort, FlavorQuota, PriorityClass, Tenancy, TenantQueue
from gpufleet.policies.gaming import UTIL_LABEL, flag_tenants
from gpufleet.policies.registry import profile
from gpufleet.sim.metrics import tenant_gpu_seconds
from gpufleet.sim.runner import SimResult, simulate
from gpufleet.sim.usage import UsageTracker
from gpufleet.testing.builders import fleet, job

H = 3600.0
FLAVOR = "H100-80GB"
GAMER = "A"


def gaming_tenancy(budget: int | None = 8) -> Tenancy:
    q = ((FLAVOR, FlavorQuota(16)),)
    return Tenancy(
        tenants=tuple(TenantQueue(n, "lab", q, 1.0, budget) for n in ("A", "B", "C")),
        cohorts=(Cohort("lab"),),
        priority_classes=(PriorityClass("normal", 0), PriorityClass("high", 100, preemptible=False)),
        half_life_s=6 * H, grace_s=60.0,
    )


def _util(j: Job, u: float) -> Job:
    return replace(j, labels=((UTIL_LABEL, f"{u:g}"),))


def _honest_others(n: int = 6, at: float = 60.0) -> list[Job]:
    return [job(f"{t}{i}").tenant(t).gpus(8).runs(2 * H).at(at + i).build()
            for t in ("B", "C") for i in range(n)]


def inflate(gaming: bool) -> list[Job]:
    """A runs twelve 2-GPU jobs; gaming, it asks 8 GPUs for each (25% used)."""
    a = [_util(job(f"A{i}").tenant("A").gpus(8 if gaming else 2).runs(2 * H).at(i).build(),
               0.25 if gaming else 1.0) for i in range(12)]
    return a + _honest_others()


def split(gaming: bool) -> list[Job]:
    """B and C fill the fleet and keep queues; nodes free one at a time. A needs 48 GPU-jobs of
    work: six 8-GPU jobs, or, gaming, forty-eight 1-GPU jobs that fit every freed hole."""
    full = [job(f"{t}{i}").tenant(t).gpus(8).runs(H + (2 * i + k) * 600).at(0).build()
            for k, t in enumerate(("B", "C")) for i in range(3)]
    queued = [job(f"{t}{i}").tenant(t).gpus(8).runs(2 * H).at(1).build()
              for t in ("B", "C") for i in range(3, 9)]
    a = ([job(f"A{i}").tenant("A").gpus(1).runs(2 * H).at(2).build() for i in range(48)] if gaming
         else [job(f"A{i}").tenant("A").gpus(8).runs(2 * H).at(2).build() for i in range(6)])
    return full + queued + a


def placeholders(gaming: bool) -> list[Job]:
    """Gaming, A parks four idle 8-GPU 'sleep' jobs for a day before B and C arrive."""
    a = [job(f"A{i}").tenant("A").gpus(8).runs(2 * H).at(0).build() for i in range(2)]
    if gaming:
        a += [_util(job(f"Ahold{i}").tenant("A").gpus(8).runs(24 * H).at(0).build(), 0.0)
              for i in range(4)]
    return a + _honest_others()


def understate(gaming: bool) -> list[Job]:
    """A builds a record first: three 1-GPU jobs that run 1 h, stated at 2.5 min (24× short) when
    gaming, at 1 h when honest; they end as the contest starts at T = 1 h. Then C's 48-GPU job
    waits at the head of the queue behind B's 3-h jobs, and A and B queue 4-h jobs behind it.
    Gaming, A states 10 minutes for them: EASY backfill that trusts estimates starts them in the
    reservation's shadow. Ours plans with A's record (actual ÷ stated = 24), so A's 10 minutes
    count as 4 h and A backfills only where an honest 4-h job would."""
    t0 = H
    history = [job(f"Ah{i}").tenant("A").gpus(1).runs(H, H / 24 if gaming else H).at(0).build()
               for i in range(3)]
    hog = [job(f"B{i}").tenant("B").gpus(8).runs(3 * H, 3 * H).at(t0).build() for i in range(3)]
    big = [job("C0").tenant("C").gpus(8).gang(6).runs(2 * H, 2 * H).at(t0 + 10).build()]
    a = [job(f"A{i}").tenant("A").gpus(8).runs(4 * H, 600 if gaming else 4 * H).at(t0 + 20 + i).build()
         for i in range(2)]
    b = [job(f"B{i + 3}").tenant("B").gpus(8).runs(4 * H, 4 * H).at(t0 + 20 + i).build() for i in range(2)]
    return history + hog + big + a + b


def all_high(gaming: bool) -> list[Job]:
    """A marks every job high priority and non-preemptible."""
    a = [job(f"A{i}").tenant("A").gpus(8).runs(2 * H).priority(100 if gaming else 0).at(60 + i).build()
         for i in range(6)]
    return a + _honest_others(6, at=0.0)


def _wait_mean_h(r: SimResult, tenant: str) -> float:
    w = [r.starts[j] - j_.submit_time for j, j_ in r.jobs.items() if j_.tenant == tenant and j in r.starts]
    return sum(w) / len(w) / H if w else float("inf")


def _share_first_4h(r: SimResult, tenant: str) -> float:
    return 100.0 * tenant_gpu_seconds(r, 0.0, 4 * H).get(tenant, 0.0) / (r.fleet_gpus * 4 * H)


@dataclass(frozen=True)
class GamingCase:
    name: str
    trick: str
    workload: Callable[[bool], list[Job]]
    naive: str
    ours: str
    measure: str
    outcome: Callable[[SimResult, str], float]
    #: +1 when a larger outcome is better for the gamer (share), −1 when smaller is (wait).
    better: int


CASES: tuple[GamingCase, ...] = (
    GamingCase("inflate", "inflating requests (asks 8 GPUs, uses 2)", inflate, "free-for-all",
               "tenancy", "A's share of the fleet in the first 4 h (%)", _share_first_4h, +1),
    GamingCase("split", "splitting a big job into many 1-GPU jobs", split, "smallest-first",
               "tenancy", "A's share of the fleet in the first 4 h (%)", _share_first_4h, +1),
    GamingCase("placeholders", "holding idle placeholder jobs", placeholders, "free-for-all",
               "tenancy", "A's share of the fleet in the first 4 h (%)", _share_first_4h, +1),
    GamingCase("understate", "under-stating run time to win backfill", understate,
               "gang-easy-trusting", "gang-easy", "A's mean wait (h)", _wait_mean_h, -1),
    GamingCase("all-high", "marking everything high priority, non-preemptible", all_high,
               "gang-bestfit", "tenancy", "A's mean wait (h)", _wait_mean_h, -1),
)


@dataclass(frozen=True)
class GamingResult:
    case: GamingCase
    #: outcome[(policy role, gaming?)] for the gamer.
    outcome: dict[tuple[str, bool], float]
    flags: dict[str, list[str]]

    def gain(self, role: str) -> float:
        """How much better off gaming left the gamer (positive = it paid), in the case's unit."""
        return self.case.better * (self.outcome[(role, True)] - self.outcome[(role, False)])


def run_case(case: GamingCase) -> GamingResult:
    f = fleet().leaves(1, nodes=6).build()
    ten = gaming_tenancy()
    outcome: dict[tuple[str, bool], float] = {}
    for role, name in (("naive", case.naive), ("ours", case.ours)):
        for gaming in (False, True):
            jobs = case.workload(gaming)
            r = simulate(f, jobs, profile(name), tenancy=ten, usage_tracker=UsageTracker(ten.half_life_s))
            outcome[(role, gaming)] = case.outcome(r, GAMER)
    return GamingResult(case, outcome, flag_tenants(case.workload(True), ten))


def run_all() -> list[GamingResult]:
    return [run_case(c) for c in CASES]
