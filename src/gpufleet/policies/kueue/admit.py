"""Kueue's admission, exactly: quota only, heads of queues, StrictFIFO or BestEffortFIFO.

What the ``kueue`` profile does in step 1 (admit) and 2 (order), from Kueue's concept docs
(ClusterQueue, Cohort, Fair Sharing; kubernetes-sigs/kueue site/content/en/docs/concepts):

* Each tenant is a ClusterQueue; its pending workloads are ordered by priority (high first),
  then creation (submit) time; with admission fair sharing, by their LocalQueue's decayed usage
  first (policies/kueue/afs.py), re-sorted after each admission (the entry penalty).
* A workload is admitted on the first of its queue's flavors where its GPUs fit the *unused
  quota*: usage + g ≤ nominal (no borrowing), or g ≤ what the cohort can lend within the
  borrowing limit (borrowing, QuotaLedger.available). With ``whenCanBorrow: TryNextFlavor`` a
  later flavor that fits without borrowing is preferred to borrowing on an earlier one.
  Unlike ours, nominal quota is not a promise of admission: when borrowers hold it, the
  workload stays pending until preemption frees the quota (policies/kueue/preemption.py).
* Queues are served by their heads: classic Kueue takes heads by *borrowing level* (0: fits
  the queue's nominal quota; k: the nearest ancestor cohort whose own subtree has room is k
  levels up, ``borrowing_level``), so a head borrowing inside its team's cohort goes before one
  that must borrow from the whole organisation; then higher priority, then older. With fair
  sharing, Kueue's tournament over the cohort tree (policies/kueue/fair.py).
  ``StrictFIFO``: a head that does not fit blocks its whole queue; ``BestEffortFIFO``: it
  steps aside and the next workload of the queue is tried.
* A head that does not fit holds quota for the rest of the cycle (Kueue's scheduler,
  ``reserveCapacityForUnreclaimablePreempt`` and the usage a preempting head adds): without
  borrowing, its queue's idle nominal quota, min(g, nominal − used); borrowing, up to its
  borrowing limit, min(g, nominal + limit − used). Later heads of the cycle — borrowers of
  other queues — cannot take it, so a lender's own head is not starved by borrowers that would
  arrive in the same cycle. Kueue skips the hold when the head has no preemption targets and
  the queue can always reclaim (``CanAlwaysReclaim``: ``reclaimWithinCohort: Any``), whatever
  its other policies; so do we (the quota oracle decides "no targets").
* Nomination (Kueue's ``nominate`` then ``processEntry``): a head is assigned its flavor on the
  state when it becomes head (the cycle's start for the first heads; in our compressed cycles a
  queue's next workload becomes head once the one before it is decided) and, when its turn
  comes, is admitted on that flavor if it still fits; else it is skipped ("no longer fits after
  processing another workload": no preemption, no hold) and next cycle its flavor scan starts
  after that flavor (``FlavorFungibilityPreserveScanProgress``; ``AdmissionState.scan``).
* Quota reserved stays reserved (``QuotaReserved``): a workload admitted in an earlier cycle
  whose pods have not started (no room on the nodes yet) keeps its quota, carried by the driver
  in ``CycleInput.admission`` (engine/types.py ``AdmissionState``), and is not re-decided.
* Sticky head (BestEffortFIFO, KEP-7157): a workload whose preemptions are pending stays first
  in its queue's order (after LocalQueue usage with admission fair sharing) until admitted, so
  an older workload of its queue that does not fit cannot step in front of it while its victims
  leave, and let the victims be re-admitted (kueue#6929). policies/kueue/preemption.py names it.
* Weighted share (Kueue's DRS value) at every level of the cohort tree, with the queues' and
  the cohorts' weights: policies/kueue/share.py. Heads are compared at their common ancestor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import cast

from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, QuotaReservation, RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.afs import AfsUsage
from gpufleet.policies.kueue.fair import Entry, entry, tournament
from gpufleet.policies.kueue.flavors import (  # noqa: F401  (re-exported: tests and callers import them here)
    MODE_RANK,
    assign_flavor,
    assign_pod_sets,
    assign_pod_sets_modes,
    borrowing_level,
    kueue_flavor,
    nominate,
    pin_pod_sets,
    reachable,
    reservation,
    resume_scan,
    still_fits,
    worst_mode,
)
from gpufleet.policies.kueue.reserved import charge_reservation, reservation_still_valid, sticky_heads
from gpufleet.policies.kueue.resources import ResourceLedger
from gpufleet.policies.kueue.share import share_ledger
from gpufleet.policies.kueue.targets import possibility
from gpufleet.policies.quota import (
    UNKNOWN_TENANT,
    AdmissionBook,
    AdmissionRecord,
    QuotaLedger,
    _keep_admission_book,
    admission_book,
    with_flavor,
)

INSUFFICIENT_QUOTA = "InsufficientUnusedQuota"
#: Kueue's "Workload no longer fits after processing another workload": nominated on a flavor
#: that a head admitted earlier in the same cycle took; requeued, no preemption, no hold.
NO_LONGER_FITS = "NoLongerFitsAfterProcessingAnotherWorkload"
#: A resumed flavor scan with no flavor of the workload left after the one it lost (Kueue: NoFit
#: that cycle, the next scan from the first flavor).
NO_FLAVOR_LEFT = "NoFlavorLeftToTry"
STRICT_FIFO_BLOCKED = "StrictFIFOBlocked"


class KueueAdmitter:
    """Kueue's admission (module docstring); records go to the cycle's AdmissionBook like ours,
    so the Kueue preemptor reads the same hand-off."""

    name = "kueue-admission"

    def records(self, ctx: CycleContext) -> list[AdmissionRecord]:
        return admission_book(ctx).records

    def admit(self, pending: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        tenancy: Tenancy | None = ctx.tenancy
        if tenancy is None:
            return list(pending)
        state = ctx.admission
        # Group flavors of running workloads and kept reservations (a pending one is assigned anew).
        keep = {rj.job.id for rj in ctx.running} | set(state.reserved)
        res = ResourceLedger.from_running(tenancy, ctx.running, assigned={
            j: fl for j, fl in state.group_flavors.items() if j in keep} if state.group_flavors else None)
        # With fair sharing and cpu or memory quota, the shares count those too (kueue/share.py).
        ledger = share_ledger(QuotaLedger.from_running(tenancy, ctx.running), res)
        queues: dict[str, list[PendingJob]] = {}
        records: list[AdmissionRecord] = []
        kept: list[tuple[PendingJob, QuotaReservation]] = []
        for pj in pending:
            r = state.reserved.get(pj.job.id) if state.reserved else None
            if r is not None and reservation_still_valid(r, pj.job, ledger):
                kept.append((pj, r))  # admitted in an earlier cycle: not re-decided
                continue
            if tenancy.tenant(pj.job.tenant) is None:
                why = (UNKNOWN_TENANT, f"no ClusterQueue for tenant {pj.job.tenant!r}")
                ctx.statuses.record(pj.job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
                records.append(AdmissionRecord(pj, False, "", why[0]))
                continue
            start = state.scan.get(pj.job.id) if state.scan else None
            if start is not None:  # the flavor scan resumes where the last cycle's stopped
                resumed = resume_scan(ledger, pj.job, start)
                if resumed is None:
                    why = (NO_FLAVOR_LEFT, f"ClusterQueue {pj.job.tenant!r}: no flavor of {pj.job.id} "
                           "left after the one it was nominated on; the next scan starts from the first")
                    ctx.statuses.record(pj.job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
                    records.append(AdmissionRecord(pj, False, "", why[0]))
                    continue
                pj = PendingJob(resumed, pj.bound)
            queues.setdefault(pj.job.tenant, []).append(pj)
        admitted: list[PendingJob] = []
        reserved: dict[JobId, QuotaReservation] = {}
        rank = 0
        # Quota reserved in earlier cycles stays reserved (Kueue's QuotaReserved): charged before
        # anyone is admitted, and placed first (their pods were created first).
        kept.sort(key=lambda k: (-k[0].job.priority, k[1].since, k[0].job.submit_time, k[0].job.id))
        for pj, r in kept:
            pinned = charge_reservation(ledger, res, pj.job, r)
            admitted.append(PendingJob(pinned, pj.bound))
            records.append(AdmissionRecord(admitted[-1], True, r.flavor,
                                           tier=int(not ledger.within_nominal(pj.job.tenant, r.flavor)),
                                           rank=rank))
            reserved[pj.job.id] = r
            rank += 1
        sticky = sticky_heads(state.sticky, queues, tenancy)
        afs = AfsUsage(tenancy, ctx.usage, ctx.running, ctx.now) if any(
            t.kueue.admission_fair_sharing for t in tenancy.tenants) else None

        def order(name: str) -> Callable[[PendingJob], tuple]:
            first = sticky.get(name)
            if afs is not None and self._afs(tenancy, name):
                # LocalQueue usage decides before the sticky head does (KEP-7157 "Ordering").
                return lambda p: (afs.key(p.job)[0], p.job.id != first, *afs.key(p.job)[1:])
            return lambda p: (p.job.id != first, -p.job.priority, p.job.submit_time, p.job.id)

        for name, q in queues.items():
            q.sort(key=order(name))
        heads = {t: 0 for t in queues}
        # Each head's key changes only when quota is charged (an admission) or when that queue's
        # head moves on: recompute all keys after an admission, one key after a refusal.
        keys = {t: self._head_key(queues[t][0], ledger, res, tenancy) for t in heads}
        # Kueue nominates each queue's head on the cycle's starting state and admits it on that
        # flavor if it still fits when its turn comes; a head becomes nominated when it becomes
        # head (for later workloads of a queue, our compressed cycles: module docstring).
        live = [rj for rj in ctx.running if not rj.evicting]
        nominated = {t: nominate(ledger, queues[t][0].job, res, live) for t in heads}
        #: bumped by every charge (an admission, a hold): a nomination made at the current
        #: generation is the assignment as it stands, reused without a second flavor search.
        generation = 0
        nominated_at = dict.fromkeys(heads, 0)
        scan_out: dict[JobId, int] = {}
        holding: set[str] = set()
        holds: dict[str, tuple[str, int]] = {}
        hold_for: dict[str, tuple[Job, str | None]] = {}
        # (queue, candidate flavors) → fewest GPUs refused this cycle. GPU quota only grows within
        # a cycle (admissions and holds are charged, nothing is released), so a later workload of
        # the queue asking as many GPUs or more on the same flavors is refused too, without the
        # flavor search: what kept a congested week of the kueue profile slow.
        refused: dict[tuple[str, tuple[str, ...]], int] = {}
        while heads:
            held = False
            tenant = (tournament(ledger, {t: k for t in heads if isinstance(k := keys[t], Entry)})
                      if tenancy.fair_sharing else min(heads, key=lambda t: cast(tuple, keys[t])))
            pj = queues[tenant][heads[tenant]]
            job = pj.job
            own_hold = holds.get(tenant)
            if own_hold is not None:  # a queue's hold keeps others out, not its own workloads
                ledger.add(tenant, own_hold[0], -own_hold[1])
            nom = nominated.pop(tenant, None)
            if nom is not None and nom.job != job.id:
                nom = None
            skipped = None
            if nom is not None and (fit := nom.fit) is not None:
                # Kueue admits a head on the flavor it was nominated on if that still fits
                # (``cq.Fits``), else skips it: requeued, no preemption, no hold.
                if still_fits(ledger, job, res, fit):
                    flavor, mode = fit, "fit"
                    borrows = not ledger.within_nominal(tenant, fit, job.total_gpus)
                else:
                    flavor, mode, borrows, skipped = None, "fit", False, nom
            elif nom is not None and nominated_at.get(tenant) == generation:
                flavor, mode, borrows = nom.assignment
            else:
                flavor, mode, borrows = assign_flavor(ledger, job, res, live)
            split = None
            target = pj  # what a refused workload's record hands the preemptor
            if skipped is None and sum(1 for ps in job.pod_sets if ps.request.gpus) > 1:
                split = assign_pod_sets(ledger, job, res)
                if split is not None and len({f for _, f, _ in split}) > 1:
                    flavor, mode, borrows = split[0][1], "fit", any(b for _, _, b in split)
                else:
                    split = None  # one flavor for all: the whole-workload assignment stands
                    modes = assign_pod_sets_modes(ledger, job, res, live) if mode != "fit" else None
                    if modes is not None and len({f for _, f, _, _ in modes}) > 1:
                        # Pod sets on different flavors, one or more needing preemption: the
                        # preemptor searches targets for the usage of every pod set.
                        flavor, mode = modes[0][1], worst_mode(m for _, _, m, _ in modes)
                        target = PendingJob(pin_pod_sets(job, [(i, f, b) for i, f, _, b in modes]), pj.bound)
            chosen: str | None = None
            if mode != "fit":
                chosen, flavor = flavor, None
            if split is not None:
                pinned = pin_pod_sets(job, split)
                for i, f, _ in split:
                    part = replace(job, pod_sets=(job.pod_sets[i],))
                    ledger.add(job.tenant, f, part.total_gpus)
                    res.add_job(part, f)
            elif flavor is not None:
                pinned = with_flavor(job, flavor) if job.total_gpus else job
                ledger.add(job.tenant, flavor, job.total_gpus)
                res.add_job(job, flavor)
            if flavor is not None:
                generation += 1
                admitted.append(PendingJob(pinned, pj.bound))
                records.append(AdmissionRecord(admitted[-1], True, flavor, tier=int(borrows), rank=rank))
                reserved[job.id] = QuotaReservation(
                    flavor, ctx.now, tuple((i, f) for i, f, _ in split) if split is not None else ())
                if sticky.get(tenant) == job.id:
                    del sticky[tenant]  # admitted: no longer sticky
                if afs is not None and self._afs(tenancy, tenant):
                    afs.admitted(job)  # the entry penalty reorders what is left of the queue
                    later = queues[tenant][heads[tenant] + 1:]
                    later.sort(key=order(tenant))
                    queues[tenant][heads[tenant] + 1:] = later
                if own_hold is not None:  # the head's hold shrinks to what its queue still has idle
                    hjob, hflavor = hold_for[tenant]
                    own_hold = self._hold(ledger, hjob, tenancy, hflavor, "", live)
                    if own_hold is None:
                        del holds[tenant]
                    else:
                        holds[tenant] = own_hold
            elif skipped is not None:
                lost = skipped.fit or ""
                again = "after that flavor" if skipped.resume is not None else "from the first flavor"
                why = (NO_LONGER_FITS, f"ClusterQueue {tenant!r}: nominated on flavor {lost}, which no "
                       f"longer fits after processing another workload; requeued, its next flavor scan "
                       f"starts {again}")
                ctx.statuses.record(job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
                records.append(AdmissionRecord(pj, False, lost, why[0], rank=rank))
                if skipped.resume is not None:
                    scan_out[job.id] = skipped.resume
            else:
                cands = ledger.candidate_flavors(job)
                why = (INSUFFICIENT_QUOTA, f"ClusterQueue {tenant!r}: insufficient unused quota for "
                       f"{job.total_gpus} GPUs in flavor(s) {', '.join(cands) or '-'}")
                other = res.gpus_fit_but(ledger, job, cands)
                if other is not None:  # the GPUs fit: cpu or memory is what is missing
                    why = (INSUFFICIENT_QUOTA, f"ClusterQueue {tenant!r}: {other}")
                ctx.statuses.record(job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
                # The flavor the assigner chose is where the preemptor looks for targets.
                records.append(AdmissionRecord(target, False, chosen or (cands[0] if cands else ""),
                                               why[0], rank=rank))
                if job.total_gpus:
                    key = (tenant, cands)
                    refused[key] = min(job.total_gpus, refused.get(key, job.total_gpus))
                # One head per ClusterQueue per Kueue cycle: only the queue's first refused
                # workload holds quota (holds do not pile up behind it).
                if tenant not in holding and target is pj:  # (no hold across flavors: one flavor per hold)
                    holding.add(tenant)
                    hold = self._hold(ledger, job, tenancy, chosen, mode, live)
                    if hold is not None:
                        holds[tenant] = own_hold = hold
                        hold_for[tenant] = (job, chosen)
                        held = True
                        generation += 1
            if own_hold is not None:
                ledger.add(tenant, own_hold[0], own_hold[1])
            if flavor is None:
                queue = tenancy.tenant(tenant)
                if queue is not None and queue.kueue.queueing_strategy == "StrictFIFO":
                    for rest in queues[tenant][heads[tenant] + 1:]:
                        why2 = (STRICT_FIFO_BLOCKED, f"StrictFIFO: behind the head of ClusterQueue "
                                f"{tenant!r}, {job.id}, which does not fit")
                        ctx.statuses.record(rest.job.id, Status(StatusCode.NOT_ADMITTED, why2, self.name))
                        records.append(AdmissionRecord(rest, False, "", why2[0], rank=rank))
                    del heads[tenant]
                    rank += 1
                    if held:
                        for t in heads:
                            keys[t] = self._key(queues[t][heads[t]], ledger, res, tenancy, holds.get(t))
                    continue
            rank += 1
            heads[tenant] += 1
            rank = self._skip_refused(queues[tenant], heads, tenant, refused, ledger, ctx, records, rank)
            if heads[tenant] >= len(queues[tenant]):
                del heads[tenant]
            else:
                nxt = queues[tenant][heads[tenant]].job
                if own_hold is not None:
                    ledger.add(tenant, own_hold[0], -own_hold[1])
                nominated[tenant] = nominate(ledger, nxt, res, live)
                nominated_at[tenant] = generation
                if own_hold is not None:
                    ledger.add(tenant, own_hold[0], own_hold[1])
            for t in (heads if flavor is not None or held else (tenant,) if tenant in heads else ()):
                keys[t] = self._key(queues[t][heads[t]], ledger, res, tenancy, holds.get(t))
        _keep_admission_book(ctx, AdmissionBook(records))
        ctx.handoff.quota_reserved = reserved
        ctx.handoff.sticky = sticky
        ctx.handoff.flavor_scan = scan_out
        if res.assigned:
            ctx.handoff.group_flavors = dict(res.assigned)
        position = {pj.job.id: i for i, pj in enumerate(pending)}
        return sorted(admitted, key=lambda p: position[p.job.id])  # who, not in which order

    def _skip_refused(self, queue: list[PendingJob], heads: dict[str, int], tenant: str,
                      refused: dict[tuple[str, tuple[str, ...]], int], ledger: QuotaLedger,
                      ctx: CycleContext, records: list[AdmissionRecord], rank: int) -> int:
        """Refuse, without a flavor search, the workloads at the queue's head that ask at least
        as many GPUs as one already refused on the same flavors (GPU quota only: with cpu or
        memory quota, demand is not monotone in GPUs). Returns the next rank."""
        t = ledger.tenancy.tenant(tenant)
        if t is None or t.resources:
            return rank
        while heads[tenant] < len(queue):
            pj = queue[heads[tenant]]
            cands = ledger.candidate_flavors(pj.job)
            least = refused.get((tenant, cands))
            if least is None or pj.job.total_gpus < least or pj.job.total_gpus == 0 or sum(
                    1 for ps in pj.job.pod_sets if ps.request.gpus) > 1:
                break  # (pod sets that may land on different flavors are assigned in full)
            why = (INSUFFICIENT_QUOTA, f"ClusterQueue {tenant!r}: insufficient unused quota for "
                   f"{pj.job.total_gpus} GPUs in flavor(s) {', '.join(cands) or '-'}")
            ctx.statuses.record(pj.job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
            records.append(AdmissionRecord(pj, False, cands[0] if cands else "", why[0], rank=rank))
            rank += 1
            heads[tenant] += 1
        return rank

    @staticmethod
    def _afs(tenancy: Tenancy, name: str) -> bool:
        t = tenancy.tenant(name)
        return t is not None and t.kueue.admission_fair_sharing

    @staticmethod
    def _hold(ledger: QuotaLedger, job: Job, tenancy: Tenancy, flavor: str | None, mode: str,
              live: list[RunningJob]) -> tuple[str, int] | None:
        """What a refused head keeps from later heads this cycle. With preemption targets Kueue
        charges the head's whole request (``cq.AddUsage``; it preempts and is admitted once the
        victims leave), else the reservation of ``reservation``."""
        if job.total_gpus == 0:
            return None
        f = flavor or next(iter(ledger.candidate_flavors(job)), None)
        if f is None or job.total_gpus > reachable(ledger, job.tenant, f):
            return None
        if mode not in ("reclaim", "preempt"):
            mode = possibility(job, f, tenancy, ledger, live)
        if mode in ("reclaim", "preempt"):
            return (f, job.total_gpus)
        return reservation(ledger, job, tenancy.fair_sharing, f)

    def _key(self, pj: PendingJob, ledger: QuotaLedger, res: ResourceLedger, tenancy: Tenancy,
             hold: tuple[str, int] | None) -> tuple | Entry:
        """The head's key, seen without its own queue's hold."""
        if hold is None:
            return self._head_key(pj, ledger, res, tenancy)
        ledger.add(pj.job.tenant, hold[0], -hold[1])
        try:
            return self._head_key(pj, ledger, res, tenancy)
        finally:
            ledger.add(pj.job.tenant, hold[0], hold[1])

    @staticmethod
    def _head_key(pj: PendingJob, ledger: QuotaLedger, res: ResourceLedger, tenancy: Tenancy
                  ) -> tuple | Entry:
        """Classic: (borrowing level, priority, age, id), the lowest first. Fair sharing: the
        head's shares with it admitted, for the tournament (policies/kueue/fair.py)."""
        job = pj.job
        if tenancy.fair_sharing:
            flavor, _ = kueue_flavor(ledger, job, res)
            return entry(ledger, job, flavor)
        flavor, borrows = kueue_flavor(ledger, job, res)
        level = borrowing_level(ledger, job.tenant, flavor, job.total_gpus) if borrows and flavor else 0
        return (level, -job.priority, job.submit_time, job.id)


class KueueOrder:
    """Kueue's head order: the order in which admission served the queues' heads (recorded as
    each record's rank), which is the order placement tries the admitted workloads."""

    name = "kueue-head-order"

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        rank = {r.pending.job.id: r.rank for r in admission_book(ctx).records}
        return sorted(admitted, key=lambda p: rank.get(p.job.id, len(rank)))
