"""Report section: the same jobs under our four-layer policy and under Kueue's rules.

Both runs read the same tenancy config; the ``kueue`` profile applies each queue's Kueue
fields (preemption policies, queueing strategy, flavor fungibility, fair sharing) exactly as
Kueue documents them (policies/kueue/). The table puts the outcomes side by side, per
tenant too; docs/kueue.md argues each difference.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpufleet.model.tenancy import Tenancy
from gpufleet.report.fmt import duration, pct
from gpufleet.report.html import Section, table

OURS, KUEUE = "tenancy", "kueue"


def kueue_section(summaries: Mapping[str, dict], tenancy: Tenancy) -> Section | None:
    if OURS not in summaries or KUEUE not in summaries:
        return None
    a, b = summaries[OURS], summaries[KUEUE]
    rows = [
        ["GPU allocation", pct(a["gpu_allocation_pct"]), pct(b["gpu_allocation_pct"])],
        ["queue wait p50", duration(a["wait_p50_s"]), duration(b["wait_p50_s"])],
        ["queue wait p95", duration(a["wait_p95_s"]), duration(b["wait_p95_s"])],
        ["queue wait p99", duration(a["wait_p99_s"]), duration(b["wait_p99_s"])],
        ["preemptions", f"{a['preemptions']:,}", f"{b['preemptions']:,}"],
        ["lost GPU-hours", f"{a['lost_gpu_hours']:,.1f}", f"{b['lost_gpu_hours']:,.1f}"],
    ]
    per = []
    for t in sorted(x.name for x in tenancy.tenants):
        ta, tb = a["tenants"][t], b["tenants"][t]
        k = tenancy.tenant(t).kueue
        per.append([t, pct(ta["entitlement_pct"]),
                    f"{duration(ta['wait_p95_s'])} / {pct(ta['share_of_fleet_pct'])}",
                    f"{duration(tb['wait_p95_s'])} / {pct(tb['share_of_fleet_pct'])}",
                    f"within {k.within_cluster_queue}, reclaim {k.reclaim_within_cohort}, "
                    f"borrow {k.borrow_within_cohort}, {k.queueing_strategy}"])
    html = (
        "<p>The same jobs and the same quotas, decided twice: by our four-layer policy "
        "(<code>tenancy</code>: a job within its tenant's nominal quota is admitted and reclaims what "
        "borrowers hold; fair share orders tenants; checkpoint-aware victims) and by Kueue's rules "
        "(<code>kueue</code>: admission only into unused quota, heads of queues, each queue's "
        "preemption policy, candidates by priority and recency). docs/kueue.md gives every "
        "difference with its argument.</p>"
        + table(["metric", "ours (tenancy)", "Kueue (kueue)"], rows)
        + table(["tenant", "entitlement", "ours: wait p95 / share", "Kueue: wait p95 / share",
                 "Kueue policy of the queue"], per))
    return Section("Ours and Kueue, side by side", html)
