"""The ``k8s analyze`` report: one data dict (JSON), terminal lines and an HTML page, all from
the same ``Analysis`` so the three never disagree."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

from gpufleet.adapters.kubernetes.analyze import Analysis
from gpufleet.adapters.kubernetes.kueue_quota import show
from gpufleet.report.html import Section, render, table


def _when(t: float | None, now: float) -> str | None:
    if t is None:
        return None
    stamp = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{stamp} (+{(t - now) / 3600:.1f} h)" if t > now else f"{stamp} (now)"


def analysis_dict(a: Analysis) -> dict[str, Any]:
    return {
        "snapshot_time": datetime.fromtimestamp(a.now, UTC).isoformat() if a.now else None,
        "snapshot_time_source": a.now_source,
        "assumed_runtime_hours": a.assume_runtime_s / 3600,
        "gpus": a.totals,
        "overcommitted": [{"node": o.node, "gpus_allocatable": o.allocatable, "gpus_requested": o.requested,
                           "pods": o.pods} for o in a.overcommitted],
        "fragmentation": {f"{k}-gpu pods": round(v, 4) for k, v in a.fragmentation.items()},
        "skipped_kinds": dict(sorted(a.skipped.items())),
        "notes": a.notes,
        "nodes": [{"name": n.name, "gpu": n.node.gpu, "gpus_allocatable": n.gpu.allocatable,
                   "gpus_physical": n.gpu.physical, "schedulable": n.node.health.schedulable,
                   "zone": n.node.zone, "nvlink_domain": n.node.nvlink_domain,
                   "layers": [{"layer": la.name, "ok": la.ok, "detail": la.detail} for la in n.layers]}
                  for n in a.nodes],
        "stranded": [{"node": s.node, "gpus": s.gpus, "reason": s.reason} for s in a.stranded],
        "pending": [{"gang": g.gang.key, "kind": g.gang.kind, "pods": [p.key for p in g.gang.pods],
                     "gpus": g.gang.gpus, "min_member": g.gang.min_member, "code": g.code,
                     "fits_empty_cluster": g.fits_empty, "node_reasons": dict(g.reasons.most_common()),
                     "engine": g.engine, "estimated_start": datetime.fromtimestamp(g.estimated_start, UTC)
                     .isoformat() if g.estimated_start is not None else None,
                     "blocked_by": g.blockers, "chain": g.chain,
                     "counts_vs_claims": asdict(g.counts_vs_claims) if g.counts_vs_claims else None,
                     "fixes": [{"fix": f.what, "displaced_gpu_hours": f.displaced_gpu_h} for f in g.fixes],
                     "would_bind": [{"pod": p, "node": n} for p, n in g.assignments],
                     "eligible_nodes": sorted(g.eligible),
                     "quota": _quota_dict(g.quota)}
                    for g in a.gangs],
        "defrag_plan": _defrag_dict(a),
        "queued_workloads": {k: _quota_dict(v) for k, v in a.queued.items()},
    }


def _quota_dict(v) -> dict[str, Any] | None:
    if v is None:
        return None
    return {"cluster_queue": v.cluster_queue, "admits": v.admits, "borrows": v.borrows,
            "flavors": v.flavors, "demand_source": v.source,
            "demand": {r: show(r, d) for r, d in v.demand.items()},
            "blocked_by": [{"flavor": b.flavor, "resource": b.resource, "needed": b.needed,
                            "short_by": b.short_by, "detail": b.detail} for b in v.blocks]}


def _defrag_dict(a: Analysis) -> dict[str, Any] | None:
    d = a.defrag
    if d is None:
        return None
    return {"method": d.method, "optimal": d.optimal, "bound_gpus": d.bound_gpus, "notes": d.notes,
            "waiting_gpus": d.waiting_gpus, "started_gpus": d.started_gpus,
            "displaced_gpu_hours": d.displaced_gpu_h, "gpu_hours_per_gpu_started": d.gpu_h_per_gpu,
            "steps": [{"starts": s.gang, "gpus": s.gpus, "on": list(s.nodes),
                       "displaced_gpu_hours": s.displaced_gpu_h,
                       "moves": [{"gang": m.gang, "gpus": m.gpus, "from": list(m.from_nodes),
                                  "to": list(m.to_nodes), "gpu_hours": m.gpu_h} for m in s.moves]}
                      for s in d.steps]}


def defrag_lines(a: Analysis) -> list[str]:
    """The plan, step by step, cheapest displacement per GPU started first."""
    d = a.defrag
    if d is None:
        return []
    how = ("MILP, proven optimal: most GPUs started, then least GPU-h moved"
           if d.method == "milp" and d.optimal
           else f"MILP, best found in the time limit; no plan starts more than {d.bound_gpus:g} GPU(s)"
           if d.method == "milp" and d.bound_gpus is not None
           else "MILP, best found in the time limit" if d.method == "milp" else "greedy")
    out = [f"defrag plan ({how}): {len(d.steps)} step(s) start {d.started_gpus:g} of {d.waiting_gpus:g} "
           f"waiting GPU(s), moving {d.displaced_gpu_h:g} GPU-h of running work ({d.gpu_h_per_gpu:g} GPU-h "
           "per GPU started; moved gangs restart elsewhere at once)"] + [f"  note: {n}" for n in d.notes]
    total = 0.0
    for i, s in enumerate(d.steps, 1):
        total += s.displaced_gpu_h
        moves = "; ".join(f"move {m.gang} ({m.gpus:g} GPU) {','.join(m.from_nodes)} -> {','.join(m.to_nodes)}"
                          f" [{m.gpu_h:g} GPU-h]" for m in s.moves)
        out.append(f"  {i}) start {s.gang} ({s.gpus:g} GPU) on {', '.join(s.nodes)}: {moves}; "
                   f"{s.displaced_gpu_h:g} GPU-h (cumulative {total:g})")
    return out


def assumptions(a: Analysis) -> str:
    """What every estimate rests on, said once above them: the time taken as now, where it was
    read, and the run time assumed for running pods (Kubernetes records none)."""
    when = datetime.fromtimestamp(a.now, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if a.now else "unknown"
    return (f"estimates assume: now = {when} ({a.now_source}; --now sets it); every running pod "
            f"runs {a.assume_runtime_s / 3600:g} h from its start (--assume-runtime-h)")


def free_line(t: dict[str, int]) -> str:
    return (f"{t['free_on_schedulable_nodes']} free on schedulable nodes "
            f"({t['free_incl_unschedulable_nodes']} counting cordoned and not-Ready nodes), "
            f"{t['stranded']} stranded (free, and no pending pod can use them)")


def overcommit_line(o) -> str:
    pods = ", ".join(o.pods[:5]) + (f" and {len(o.pods) - 5} more" if len(o.pods) > 5 else "")
    return (f"overcommitted: node {o.node}: bound pods request {o.requested:g} GPU(s), it allocates "
            f"{o.allocatable} ({pods}); the snapshot contradicts itself (a stale or merged capture, or "
            "pods bound around the scheduler); counted as full")


def text_lines(a: Analysis) -> list[str]:
    t = a.totals
    out = [f"GPUs: {t['physical']} physical, {t['registered']} registered by the device plugin, "
           f"{t['allocatable']} allocatable, {t['usable']} usable on schedulable nodes; "
           f"{t['allocated']} allocated, {free_line(t)}",
           f"nodes: {t['nodes']} ({t['gpu_nodes']} with GPUs); pending: {t['pending_pods']} pod(s) "
           f"asking {t['pending_gpus']} GPU(s)", assumptions(a)]
    out += [overcommit_line(o) for o in a.overcommitted]
    if t["free_on_schedulable_nodes"]:
        out.append("free GPUs a pod cannot use (fragmentation): " + ", ".join(
            f"{k}-GPU pods {v:.0%}" for k, v in a.fragmentation.items()))
    down = [n for n in a.nodes if n.blocker is not None and n.has_gpus]
    for n in down:
        out.append(f"GPU node {n.name}: {n.blocker.name} layer down: {n.blocker.detail}")
    for s in a.stranded:
        out.append(f"stranded: {s.gpus} GPU(s) on {s.node}: {s.reason}")
    for g in a.gangs:
        out.append("")
        out += [g.chain[0]] + [f"  {line}" for line in g.chain[1:]]
    for key, v in a.queued.items():
        out += ["", f"Kueue Workload {key} (no pods yet): {v.line()}"]
    if a.defrag is not None:
        out += ["", *defrag_lines(a)]
    if a.skipped:
        out.append("")
        out.append("skipped kinds (not read): "
                   + ", ".join(f"{k} x{n}" for k, n in sorted(a.skipped.items())))
    out += [f"note: {n}" for n in a.notes]
    return out


def _layers_cell(n) -> Markup:
    parts = []
    for la in n.layers:
        cls = "ok" if la.ok else "bad"
        parts.append(f'<span class="{cls}" title="{escape(la.detail)}">{escape(la.name)}</span>')
    return Markup(" → ".join(parts))


def html_report(a: Analysis) -> str:
    t = a.totals
    summary = table(["physical", "registered", "allocatable", "usable", "allocated",
                     "free on schedulable nodes", "free incl. unschedulable nodes", "stranded",
                     "overcommitted nodes", "pending pods", "pending GPUs"],
                    [[t["physical"], t["registered"], t["allocatable"], t["usable"], t["allocated"],
                      t["free_on_schedulable_nodes"], t["free_incl_unschedulable_nodes"], t["stranded"],
                      t["overcommitted_nodes"], t["pending_pods"], t["pending_gpus"]]])
    summary += "".join(f"<p>{escape(overcommit_line(o))}</p>" for o in a.overcommitted)
    nodes = table(["node", "GPU", "allocatable / physical", "schedulable", "readiness (hover for detail)",
                   "first failure"],
                  [[n.name, n.node.gpu, f"{n.gpu.allocatable} / {n.gpu.physical}",
                    "yes" if n.node.health.schedulable else "no", _layers_cell(n),
                    f"{n.blocker.name}: {n.blocker.detail}" if n.blocker else "-"] for n in a.nodes])
    frag = ("<p>Free GPUs a pod of each size cannot use (fragmentation): "
            + ", ".join(f"{k}-GPU pods {v:.0%}" for k, v in a.fragmentation.items()) + "</p>"
            if t["free_on_schedulable_nodes"] else "")
    stranded = frag + (table(["node", "GPUs", "why"], [[s.node, s.gpus, s.reason] for s in a.stranded])
                if a.stranded else "<p>No free GPU is stranded.</p>")
    gangs = "".join(
        f"<h3>{escape(g.gang.key)} <small>({escape(g.gang.kind)}, {escape(g.code)})</small></h3><ol>"
        + "".join(f"<li>{escape(line)}</li>" for line in g.chain[1:])
        + f"</ol><p>estimated start: {escape(_when(g.estimated_start, a.now) or 'none')}</p>"
        for g in a.gangs) or "<p>Nothing is pending.</p>"
    if a.queued:
        gangs += ("<h3>Kueue Workloads waiting for quota (no pods yet)</h3>"
                  + table(["Workload", "ClusterQueue", "admits", "quota arithmetic"],
                          [[k, v.cluster_queue, "yes" if v.admits else "no", v.line()]
                           for k, v in a.queued.items()]))
    d = a.defrag
    defrag = ("<p>" + str(escape(defrag_lines(a)[0])) + "</p>" + table(
        ["#", "start", "GPUs", "on", "moves (gang, GPUs, from → to, GPU-h)", "GPU-h moved"],
        [[i, s.gang, f"{s.gpus:g}", ", ".join(s.nodes),
          "; ".join(f"{m.gang} ({m.gpus:g}) {','.join(m.from_nodes)} → {','.join(m.to_nodes)}: {m.gpu_h:g}"
                    for m in s.moves), f"{s.displaced_gpu_h:g}"]
         for i, s in enumerate(d.steps, 1)]) if d is not None else
              "<p>No set of moves lets a waiting gang start (or nothing waits on GPUs).</p>")
    defrag += ("<p><small>Moves are evictions whose pods fit in free room elsewhere (re-created at once); "
               "cost = GPUs × hours the moved gang has run (a MIG instance counts G/7 of a GPU). "
               "MILP (scipy/HiGHS): the most GPUs started, then the fewest GPU-hours moved; "
               "greedy: cheapest gang per GPU, step by step. DRA-claim pods are neither placed "
               "nor moved.</small></p>")
    skipped = ("<p>Skipped (kinds this report does not read): "
               + str(escape(", ".join(f"{k} x{n}" for k, n in sorted(a.skipped.items())))) + "</p>"
               if a.skipped else "")
    notes = "".join(f"<p>note: {escape(n)}</p>" for n in a.notes)
    style = ("<style>.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}"
             "small{font-weight:400;color:#555}</style>")
    sections = [
        Section("GPUs: allocated vs usable", style + summary + skipped + notes
                + f"<p>{escape(assumptions(a))} (Kubernetes records no run time).</p>"),
        Section("Nodes and the four GPU layers", nodes),
        Section("Stranded GPUs", stranded),
        Section("Pending pods and gangs: why they wait", gangs),
        Section("Defrag plan for the whole cluster", defrag),
    ]
    when = _when(a.now, a.now) or "unknown time"
    return render("Kubernetes cluster analysis", f"snapshot of {when}", sections)
