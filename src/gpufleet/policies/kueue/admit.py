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

The steps, in Kueue's order, and the state they share: policies/kueue/cycle.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.cycle import AdmissionCycle
from gpufleet.policies.quota import AdmissionBook, AdmissionRecord, _keep_admission_book, admission_book


class KueueAdmitter:
    """Kueue's admission (module docstring), one ``AdmissionCycle`` (policies/kueue/cycle.py:
    queue, nominate, iterate, process each entry, requeue) per cycle; records go to the cycle's
    AdmissionBook like ours, so the Kueue preemptor reads the same hand-off."""

    name = "kueue-admission"

    def records(self, ctx: CycleContext) -> list[AdmissionRecord]:
        return admission_book(ctx).records

    def admit(self, pending: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        tenancy: Tenancy | None = ctx.tenancy
        if tenancy is None:
            return list(pending)
        cycle = AdmissionCycle(self.name, tenancy, ctx)
        admitted = cycle.run(pending)
        _keep_admission_book(ctx, AdmissionBook(cycle.records))
        ctx.handoff.quota_reserved = cycle.reserved
        ctx.handoff.sticky = cycle.sticky
        ctx.handoff.flavor_scan = cycle.scan_out
        if cycle.res.assigned:
            ctx.handoff.group_flavors = dict(cycle.res.assigned)
        position = {pj.job.id: i for i, pj in enumerate(pending)}
        return sorted(admitted, key=lambda p: position[p.job.id])  # who, not in which order


class KueueOrder:
    """Kueue's head order: the order in which admission served the queues' heads (recorded as
    each record's rank), which is the order placement tries the admitted workloads."""

    name = "kueue-head-order"

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        rank = {r.pending.job.id: r.rank for r in admission_book(ctx).records}
        return sorted(admitted, key=lambda p: rank.get(p.job.id, len(rank)))
