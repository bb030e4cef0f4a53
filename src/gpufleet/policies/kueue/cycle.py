"""One admission cycle of the ``kueue`` profile, as Kueue's scheduler runs it: queue the
workloads, nominate each ClusterQueue's head, iterate over the heads, process each entry
(admit, skip or refuse it), requeue (the queue's next workload becomes head). The rules are in
policies/kueue/admit.py's docstring; this module is their order and the state they share.

The cycle's state (``AdmissionCycle``): quota charged so far, each queue's workloads and head,
each head's key and nomination, the holds of refused heads, and what the cycle hands on. One
entry's state (``Head``): the head, its queue's hold (lifted while it is processed), and the
assignment processing reaches. Two memos decide nothing and keep a congested cycle fast: a
nomination made at the current charge generation is reused without a second flavor search,
and a workload asking at least as many GPUs as one refused on the same flavors is refused
without one (GPU quota only grows within a cycle: nothing is released).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import cast

from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, QuotaReservation
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.afs import AfsUsage
from gpufleet.policies.kueue.fair import Entry, tournament
from gpufleet.policies.kueue.flavors import (
    Nomination,
    assign_flavor,
    assign_pod_sets,
    assign_pod_sets_modes,
    head_key,
    nominate,
    pin_pod_sets,
    refused_hold,
    resume_scan,
    still_fits,
    worst_mode,
)
from gpufleet.policies.kueue.reserved import charge_reservation, reservation_still_valid, sticky_heads
from gpufleet.policies.kueue.resources import ResourceLedger
from gpufleet.policies.kueue.share import share_ledger
from gpufleet.policies.quota import UNKNOWN_TENANT, AdmissionRecord, QuotaLedger, with_flavor

INSUFFICIENT_QUOTA = "InsufficientUnusedQuota"
#: Kueue's "Workload no longer fits after processing another workload": nominated on a flavor
#: that a head admitted earlier in the same cycle took; requeued, no preemption, no hold.
NO_LONGER_FITS = "NoLongerFitsAfterProcessingAnotherWorkload"
#: A resumed flavor scan with no flavor of the workload left after the one it lost (Kueue: NoFit
#: that cycle, the next scan from the first flavor).
NO_FLAVOR_LEFT = "NoFlavorLeftToTry"
STRICT_FIFO_BLOCKED = "StrictFIFOBlocked"

Hold = tuple[str, int]


@dataclass(slots=True)
class Head:
    """One entry being processed: the head ``pj`` of queue ``tenant``, its queue's hold, and the
    assignment processing reaches (``flavor`` set: admitted there; ``skipped``: its nomination
    no longer fits; neither: refused, ``chosen`` the flavor the preemptor searches)."""

    pj: PendingJob
    job: Job
    tenant: str
    own_hold: Hold | None
    flavor: str | None = None
    mode: str = "fit"
    borrows: bool = False
    skipped: Nomination | None = None
    split: list[tuple[int, str, bool]] | None = None
    target: PendingJob | None = None
    chosen: str | None = None
    held: bool = False


class AdmissionCycle:
    """The state of one Kueue admission cycle (module docstring); ``run`` plays it."""

    def __init__(self, name: str, tenancy: Tenancy, ctx: CycleContext) -> None:
        self.name, self.tenancy, self.ctx = name, tenancy, ctx
        state = ctx.admission
        # Group flavors of running workloads and kept reservations (a pending one is assigned anew).
        keep = {rj.job.id for rj in ctx.running} | set(state.reserved)
        self.res = ResourceLedger.from_running(tenancy, ctx.running, assigned={
            j: fl for j, fl in state.group_flavors.items() if j in keep} if state.group_flavors else None)
        # With fair sharing and cpu or memory quota, the shares count those too (kueue/share.py).
        self.ledger = share_ledger(QuotaLedger.from_running(tenancy, ctx.running), self.res)
        self.live = [rj for rj in ctx.running if not rj.evicting]
        self.queues: dict[str, list[PendingJob]] = {}
        self.heads: dict[str, int] = {}
        self.keys: dict[str, tuple | Entry] = {}
        self.nominated: dict[str, Nomination] = {}
        #: bumped by every charge (an admission, a hold): a nomination made at the current
        #: generation is the assignment as it stands, reused without a second flavor search.
        self.generation = 0
        self.nominated_at: dict[str, int] = {}
        self.holding: set[str] = set()
        self.holds: dict[str, Hold] = {}
        self.hold_for: dict[str, tuple[Job, str | None]] = {}
        #: (queue, candidate flavors) → fewest GPUs refused this cycle (module docstring).
        self.refused: dict[tuple[str, tuple[str, ...]], int] = {}
        self.records: list[AdmissionRecord] = []
        self.admitted: list[PendingJob] = []
        self.reserved: dict[JobId, QuotaReservation] = {}
        self.scan_out: dict[JobId, int] = {}
        self.rank = 0
        self.sticky: dict[str, JobId] = {}
        self.afs: AfsUsage | None = None

    # -- the steps ------------------------------------------------------------------------
    def run(self, pending: Sequence[PendingJob]) -> list[PendingJob]:
        self.queue(pending)
        self.nominate_heads()
        while self.heads:
            head = self.next_head()
            self.process(head)
            self.requeue(head)
        return self.admitted

    def queue(self, pending: Sequence[PendingJob]) -> None:
        """Kueue's queue manager: kept reservations are charged first (placed first: their pods
        were created first) and not re-decided; workloads of unknown queues and resumed scans
        with no flavor left are refused; the rest join their queue, in its order."""
        state, ctx = self.ctx.admission, self.ctx
        kept: list[tuple[PendingJob, QuotaReservation]] = []
        for pj in pending:
            r = state.reserved.get(pj.job.id) if state.reserved else None
            if r is not None and reservation_still_valid(r, pj.job, self.ledger):
                kept.append((pj, r))
                continue
            if self.tenancy.tenant(pj.job.tenant) is None:
                why = (UNKNOWN_TENANT, f"no ClusterQueue for tenant {pj.job.tenant!r}")
                self._record_refusal(pj, why, "")
                continue
            start = state.scan.get(pj.job.id) if state.scan else None
            if start is not None:  # the flavor scan resumes where the last cycle's stopped
                resumed = resume_scan(self.ledger, pj.job, start)
                if resumed is None:
                    self._record_refusal(pj, (NO_FLAVOR_LEFT, (
                        f"ClusterQueue {pj.job.tenant!r}: no flavor of {pj.job.id} left after the one "
                        "it was nominated on; the next scan starts from the first")), "")
                    continue
                pj = PendingJob(resumed, pj.bound)
            self.queues.setdefault(pj.job.tenant, []).append(pj)
        kept.sort(key=lambda k: (-k[0].job.priority, k[1].since, k[0].job.submit_time, k[0].job.id))
        for pj, r in kept:
            pinned = charge_reservation(self.ledger, self.res, pj.job, r)
            self.admitted.append(PendingJob(pinned, pj.bound))
            self.records.append(AdmissionRecord(self.admitted[-1], True, r.flavor, tier=int(
                not self.ledger.within_nominal(pj.job.tenant, r.flavor)), rank=self.rank))
            self.reserved[pj.job.id] = r
            self.rank += 1
        self.sticky = sticky_heads(state.sticky, self.queues, self.tenancy)
        if any(t.kueue.admission_fair_sharing for t in self.tenancy.tenants):
            self.afs = AfsUsage(self.tenancy, ctx.usage, ctx.running, ctx.now)
        for name, q in self.queues.items():
            q.sort(key=self._order(name))

    def nominate_heads(self) -> None:
        """Kueue's ``nominate``: every queue's head is assigned its flavor on the cycle's
        starting state."""
        self.heads = dict.fromkeys(self.queues, 0)
        self.keys = {t: self._head_key(self.queues[t][0]) for t in self.heads}
        self.nominated = {t: nominate(self.ledger, self.queues[t][0].job, self.res, self.live)
                          for t in self.heads}
        self.nominated_at = dict.fromkeys(self.heads, 0)

    def next_head(self) -> Head:
        """Kueue's iterator: the tournament (fair sharing) or the lowest key (borrowing level,
        priority, age). The head's own queue's hold is lifted while it is processed."""
        heads, keys = self.heads, self.keys
        tenant = (tournament(self.ledger, {t: k for t in heads if isinstance(k := keys[t], Entry)})
                  if self.tenancy.fair_sharing else min(heads, key=lambda t: cast(tuple, keys[t])))
        pj = self.queues[tenant][heads[tenant]]
        own_hold = self.holds.get(tenant)
        if own_hold is not None:
            self.ledger.add(tenant, own_hold[0], -own_hold[1])
        return Head(pj, pj.job, tenant, own_hold, target=pj)

    def process(self, head: Head) -> None:
        """Kueue's ``processEntry``: assign, then admit, skip or refuse; the queue's hold is
        charged again after."""
        self._assign(head)
        if head.flavor is not None:
            self._admit(head)
        elif head.skipped is not None:
            self._skip(head)
        else:
            self._refuse(head)
        if head.own_hold is not None:
            self.ledger.add(head.tenant, head.own_hold[0], head.own_hold[1])

    def requeue(self, head: Head) -> None:
        """The queue's next workload becomes head and is nominated (StrictFIFO: a head that did
        not fit blocks its queue instead); the keys that the charge changed are recomputed: all
        after an admission or a hold, the queue's own after a refusal."""
        tenant, heads, queue = head.tenant, self.heads, self.queues[head.tenant]
        if head.flavor is None:
            q = self.tenancy.tenant(tenant)
            if q is not None and q.kueue.queueing_strategy == "StrictFIFO":
                for rest in queue[heads[tenant] + 1:]:
                    self._record_refusal(rest, (STRICT_FIFO_BLOCKED, (
                        f"StrictFIFO: behind the head of ClusterQueue {tenant!r}, {head.job.id}, "
                        "which does not fit")), "")
                del heads[tenant]
                self.rank += 1
                if head.held:
                    self._rekey(heads)
                return
        self.rank += 1
        heads[tenant] += 1
        self._skip_refused(tenant)
        if heads[tenant] >= len(queue):
            del heads[tenant]
        else:
            hold = head.own_hold
            if hold is not None:
                self.ledger.add(tenant, hold[0], -hold[1])
            self.nominated[tenant] = nominate(self.ledger, queue[heads[tenant]].job, self.res, self.live)
            self.nominated_at[tenant] = self.generation
            if hold is not None:
                self.ledger.add(tenant, hold[0], hold[1])
        self._rekey(heads if head.flavor is not None or head.held else
                    (tenant,) if tenant in heads else ())

    # -- processing one entry -------------------------------------------------------------
    def _assign(self, head: Head) -> None:
        """The nominated flavor if it still fits (``cq.Fits``; else skipped), the nomination as
        it stands, or a fresh flavor search; then per pod set when more than one asks GPUs."""
        job, tenant, ledger, res = head.job, head.tenant, self.ledger, self.res
        nom = self.nominated.pop(tenant, None)
        if nom is not None and nom.job != job.id:
            nom = None
        if nom is not None and (fit := nom.fit) is not None:
            if still_fits(ledger, job, res, fit):
                head.flavor, head.borrows = fit, not ledger.within_nominal(tenant, fit, job.total_gpus)
            else:
                head.skipped = nom
        elif nom is not None and self.nominated_at.get(tenant) == self.generation:
            head.flavor, head.mode, head.borrows = nom.assignment
        else:
            head.flavor, head.mode, head.borrows = assign_flavor(ledger, job, res, self.live)
        if head.skipped is None and sum(1 for ps in job.pod_sets if ps.request.gpus) > 1:
            split = assign_pod_sets(ledger, job, res)
            if split is not None and len({f for _, f, _ in split}) > 1:
                head.split = split
                head.flavor, head.mode, head.borrows = split[0][1], "fit", any(b for _, _, b in split)
            else:  # one flavor for all: the whole-workload assignment stands
                modes = assign_pod_sets_modes(ledger, job, res, self.live) if head.mode != "fit" else None
                if modes is not None and len({f for _, f, _, _ in modes}) > 1:
                    # Pod sets on different flavors, one or more needing preemption: the
                    # preemptor searches targets for the usage of every pod set.
                    head.flavor, head.mode = modes[0][1], worst_mode(m for _, _, m, _ in modes)
                    head.target = PendingJob(pin_pod_sets(job, [(i, f, b) for i, f, _, b in modes]),
                                             head.pj.bound)
        if head.mode != "fit":
            head.chosen, head.flavor = head.flavor, None

    def _admit(self, head: Head) -> None:
        """Charge the assignment, record it and the quota reservation; the queue's hold shrinks
        to what its queue still has idle."""
        job, tenant, flavor = head.job, head.tenant, head.flavor
        assert flavor is not None
        if head.split is not None:
            pinned = pin_pod_sets(job, head.split)
            for i, f, _ in head.split:
                part = replace(job, pod_sets=(job.pod_sets[i],))
                self.ledger.add(tenant, f, part.total_gpus)
                self.res.add_job(part, f)
        else:
            pinned = with_flavor(job, flavor) if job.total_gpus else job
            self.ledger.add(tenant, flavor, job.total_gpus)
            self.res.add_job(job, flavor)
        self.generation += 1
        self.admitted.append(PendingJob(pinned, head.pj.bound))
        self.records.append(AdmissionRecord(self.admitted[-1], True, flavor, tier=int(head.borrows),
                                            rank=self.rank))
        self.reserved[job.id] = QuotaReservation(
            flavor, self.ctx.now, tuple((i, f) for i, f, _ in head.split) if head.split is not None else ())
        if self.sticky.get(tenant) == job.id:
            del self.sticky[tenant]  # admitted: no longer sticky
        if self.afs is not None and self._afs(tenant):
            self.afs.admitted(job)  # the entry penalty reorders what is left of the queue
            queue, at = self.queues[tenant], self.heads[tenant]
            queue[at + 1:] = sorted(queue[at + 1:], key=self._order(tenant))
        if head.own_hold is not None:
            hjob, hflavor = self.hold_for[tenant]
            head.own_hold = self._hold(hjob, hflavor, "")
            if head.own_hold is None:
                del self.holds[tenant]
            else:
                self.holds[tenant] = head.own_hold

    def _skip(self, head: Head) -> None:
        """Requeued without preemption or hold; the next scan starts after the lost flavor."""
        skipped = head.skipped
        assert skipped is not None
        lost = skipped.fit or ""
        again = "after that flavor" if skipped.resume is not None else "from the first flavor"
        self._record_refusal(head.pj, (NO_LONGER_FITS, (
            f"ClusterQueue {head.tenant!r}: nominated on flavor {lost}, which no longer fits after "
            f"processing another workload; requeued, its next flavor scan starts {again}")), lost)
        if skipped.resume is not None:
            self.scan_out[head.job.id] = skipped.resume

    def _refuse(self, head: Head) -> None:
        """InsufficientUnusedQuota, on the flavor the assigner chose (where the preemptor looks
        for targets). One head per ClusterQueue per Kueue cycle: only the queue's first refused
        workload holds quota (no hold across flavors: one flavor per hold)."""
        job, tenant = head.job, head.tenant
        cands = self.ledger.candidate_flavors(job)
        why = (INSUFFICIENT_QUOTA, f"ClusterQueue {tenant!r}: insufficient unused quota for "
               f"{job.total_gpus} GPUs in flavor(s) {', '.join(cands) or '-'}")
        other = self.res.gpus_fit_but(self.ledger, job, cands)
        if other is not None:  # the GPUs fit: cpu or memory is what is missing
            why = (INSUFFICIENT_QUOTA, f"ClusterQueue {tenant!r}: {other}")
        target = head.target or head.pj
        self.ctx.statuses.record(job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
        self.records.append(AdmissionRecord(target, False, head.chosen or (cands[0] if cands else ""),
                                            why[0], rank=self.rank))
        if job.total_gpus:
            key = (tenant, cands)
            self.refused[key] = min(job.total_gpus, self.refused.get(key, job.total_gpus))
        if tenant not in self.holding and target is head.pj:
            self.holding.add(tenant)
            hold = self._hold(job, head.chosen, head.mode)
            if hold is not None:
                self.holds[tenant] = head.own_hold = hold
                self.hold_for[tenant] = (job, head.chosen)
                head.held = True
                self.generation += 1

    def _skip_refused(self, tenant: str) -> None:
        """Refuse, without a flavor search, the workloads at the queue's head that ask at least
        as many GPUs as one already refused on the same flavors (GPU quota only: with cpu or
        memory quota, demand is not monotone in GPUs)."""
        t = self.ledger.tenancy.tenant(tenant)
        if t is None or t.resources:
            return
        queue = self.queues[tenant]
        while self.heads[tenant] < len(queue):
            pj = queue[self.heads[tenant]]
            cands = self.ledger.candidate_flavors(pj.job)
            least = self.refused.get((tenant, cands))
            if least is None or pj.job.total_gpus < least or pj.job.total_gpus == 0 or sum(
                    1 for ps in pj.job.pod_sets if ps.request.gpus) > 1:
                break  # (pod sets that may land on different flavors are assigned in full)
            self._record_refusal(pj, (INSUFFICIENT_QUOTA, (
                f"ClusterQueue {tenant!r}: insufficient unused quota for {pj.job.total_gpus} GPUs in "
                f"flavor(s) {', '.join(cands) or '-'}")), cands[0] if cands else "")
            self.rank += 1
            self.heads[tenant] += 1

    # -- helpers --------------------------------------------------------------------------
    def _record_refusal(self, pj: PendingJob, why: tuple[str, str], flavor: str) -> None:
        """Not admitted, ``why``; the record names ``flavor`` (rank 0 while queueing)."""
        self.ctx.statuses.record(pj.job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
        self.records.append(AdmissionRecord(pj, False, flavor, why[0], rank=self.rank))

    def _order(self, name: str) -> Callable[[PendingJob], tuple]:
        first = self.sticky.get(name)
        afs = self.afs
        if afs is not None and self._afs(name):
            # LocalQueue usage decides before the sticky head does (KEP-7157 "Ordering").
            return lambda p: (afs.key(p.job)[0], p.job.id != first, *afs.key(p.job)[1:])
        return lambda p: (p.job.id != first, -p.job.priority, p.job.submit_time, p.job.id)

    def _afs(self, name: str) -> bool:
        t = self.tenancy.tenant(name)
        return t is not None and t.kueue.admission_fair_sharing

    def _hold(self, job: Job, flavor: str | None, mode: str) -> Hold | None:
        return refused_hold(self.ledger, job, self.tenancy, flavor, mode, self.live)

    def _rekey(self, tenants) -> None:
        """Each head's key, seen without its own queue's hold."""
        for t in tenants:
            pj, hold = self.queues[t][self.heads[t]], self.holds.get(t)
            if hold is not None:
                self.ledger.add(t, hold[0], -hold[1])
            try:
                self.keys[t] = self._head_key(pj)
            finally:
                if hold is not None:
                    self.ledger.add(t, hold[0], hold[1])

    def _head_key(self, pj: PendingJob) -> tuple | Entry:
        return head_key(self.ledger, pj.job, self.res, self.tenancy)
