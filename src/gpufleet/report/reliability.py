"""The reliability report section: failures' cost per policy, recovery 30 min vs 3 min, the goodput
curve over checkpoint cadences against Young/Daly, and the spare pool — formula beside simulation."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import matplotlib.pyplot as plt

from gpufleet.report import plots
from gpufleet.report.fmt import duration
from gpufleet.report.html import Section, img, table
from gpufleet.sim.fleet_events.failures import FailureConfig
from gpufleet.studies import reliability as R
from gpufleet.studies.reliability_study import (
    cadence_curve,
    elastic_vs_rigid,
    preflight_payoff,
    recovery_comparison,
    spares_check,
    spot_cadences,
)
from gpufleet.studies.upgrade_plan import plan as upgrade_plan

RELIABILITY_ROWS: tuple[tuple[str, str, str], ...] = (
    ("goodput_pct", "goodput (work kept / GPU-time held)", "pct"),
    ("node_failures", "node failures", "int"),
    ("interruptions", "job interruptions", "int"),
    ("recovery_p50_s", "recovery p50 (failure → working again)", "dur"),
    ("recovery_p95_s", "recovery p95", "dur"),
    ("spares_used", "spares used", "int"),
    ("no_spare_when_needed", "failures that found no spare", "int"),
)


#: Rows shown when every policy's summary has them (elastic jobs ran; an upgrade rollout ran).
OPTIONAL_ROWS: tuple[tuple[str, str, str], ...] = (
    ("elastic_shrinks", "elastic shrinks (instead of stops)", "int"),
    ("elastic_grows", "elastic grow-backs (gang deltas)", "int"),
    ("elastic_hours_below_full_size", "elastic hours below full size", "hours"),
    ("upgrade_rollout_hours", "driver upgrade: rollout time", "hours"),
    ("upgrade_nodes_upgraded", "driver upgrade: nodes upgraded", "int"),
    ("upgrade_nodes_failed", "driver upgrade: nodes failed validation", "int"),
    ("upgrade_jobs_drained", "driver upgrade: jobs drained", "int"),
    ("upgrade_node_hours_out", "driver upgrade: node-hours out", "hours"),
    ("upgrade_nodes_fm_mismatch", "driver upgrade: nodes failed for Fabric Manager ≠ driver", "int"),
    ("upgrade_nodes_kernel_too_old", "driver upgrade: nodes failed for a kernel too old", "int"),
    ("driver_held_jobs", "jobs held back by the driver matrix", "int"),
    ("driver_wait_gpu_hours", "waited while restricted by the driver matrix", "gpu-hours"),
    ("driver_blocked_gpu_hours", "waited with no node for the image", "gpu-hours"),
)


def fmt(v: float, kind: str) -> str:
    if kind == "pct":
        return f"{v:.2f}%"
    if kind == "dur":
        return duration(v)
    if kind == "hours":
        return "n/a" if v is None else f"{v:,.1f} h"
    if kind == "gpu-hours":
        return f"{v:,.1f} GPU-h"
    return f"{v:,}"


def _policy_table(summaries: Mapping[str, dict]) -> str:
    names = [n for n, s in summaries.items() if "goodput_pct" in s]
    rows: list[list[object]] = [[label, *[fmt(summaries[n][k], kind) for n in names]]
                                for k, label, kind in RELIABILITY_ROWS]
    rows += [[label, *[fmt(summaries[n][k], kind) for n in names]] for k, label, kind in OPTIONAL_ROWS
             if names and all(k in summaries[n] for n in names)]
    causes = sorted({c for n in names for c in summaries[n]["lost_gpu_hours_by_cause"]})
    for c in causes:
        rows.append([f"GPU-hours lost: {c}",
                     *[f"{summaries[n]['lost_gpu_hours_by_cause'].get(c, 0.0):,.0f}" for n in names]])
    return table(["metric", *names], rows)


def _cadence_plot(young: float, daly: float, runs: list) -> str:
    fig, ax = plt.subplots(figsize=(7, 3.2))
    taus = [r.tau_s / 60 for r in runs]
    ax.plot(taus, [100 * r.goodput_formula for r in runs], "-", color=plots.COLORS[0], label="Daly (exact)")
    ax.errorbar(taus, [100 * r.goodput_sim for r in runs], yerr=[100 * r.goodput_ci.half_width for r in runs],
                fmt="o", color=plots.COLORS[1], capsize=3, label="simulated (95% interval over seeds)")
    ax.axvline(daly / 60, color="#57606a", ls="--", lw=0.8, label=f"Daly τ = {daly / 60:.1f} min")
    ax.axvline(young / 60, color="#9a6700", ls=":", lw=0.8, label=f"Young τ = {young / 60:.1f} min")
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval τ (minutes, log scale)")
    ax.set_ylabel("goodput (%)")
    ax.set_title("Goodput over checkpoint cadence", loc="left", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    return plots.to_png_b64(fig)


@dataclass
class Studies:
    """The formula-vs-simulation studies, computed once: the HTML section and the terminal
    (``gpufleet simulate``) print the same rows. ``tables``: title → (headers, rows)."""

    off: bool
    young: float
    daly: float
    daly_exact: float
    curve: list
    tables: dict[str, tuple[list[str], list[list[object]]]] = field(default_factory=dict)


def _ci(e, fmt: str = ".2f") -> str:  # noqa: ANN001 (Estimate)
    return f"{e.text(fmt, 100, '%')} (n={e.n})"


def gang_break_even_rows(per_node_day: float = 1.0, tau_s: float = 3600.0, delta_s: float = 300.0,
                         restart_s: float = 300.0) -> list[list[object]]:
    """Break-even discount per gang size with the renewal-exact waste (valid when τ approaches the
    time between reclaims, where τ/2 + R is not), at the 1 h interval and at the interval that
    maximises the gang's useful share; the first-order figure beside them for comparison."""
    rows: list[list[object]] = []
    u_od = tau_s / (tau_s + delta_s)
    for n in (1, 8, 32, 64):
        lam = n * per_node_day / 86400.0
        first = R.spot_break_even_discount(tau_s, delta_s, restart_s, lam, u_od)
        exact = R.spot_break_even_exact(tau_s, delta_s, restart_s, lam)
        best_tau, best_u = R.best_spot_interval(delta_s, restart_s, lam)
        best = 1.0 - best_u / u_od
        rows.append([f"{n}", f"{24 / (n * per_node_day):.2g} h",
                     f"{100 * first:.1f}%" if first < 1 else "≥ 100%",
                     f"{100 * exact:.1f}%" if exact < 1 else "never: no useful work left",
                     f"{best_tau / 60:.0f} min", f"{100 * best:.1f}%" if best < 1 else "never"])
    return rows


def reliability_studies(cfg: FailureConfig) -> Studies:
    """Run the studies at the run's failure rates (module docstring of reliability_section)."""
    off = cfg.scale <= 0
    if off:
        cfg = replace(cfg, scale=1.0)
    # the studies are about failures on their own fleets: the run's spot nodes, rollout and
    # scripted faults name nodes of the run's fleet (and would interrupt the studies' gangs)
    cfg = replace(cfg, spot=None, upgrade=None, scripted=())
    rec = recovery_comparison(cfg)
    curve_cfg = FailureConfig(scale=20.0, steps=cfg.steps)
    young, daly, curve = cadence_curve(curve_cfg)
    mtti = R.job_mtti_s(64, curve_cfg.rate_per_node_s(8))
    sp = spares_check(cfg, 256)
    gates = preflight_payoff()
    spot = spot_cadences(jobs=100, seeds=range(2, 8))
    elastic = elastic_vs_rigid()
    st = Studies(off, young, daly, R.daly_exact_interval_s(60.0, mtti), curve)
    st.tables["Recovery: 30 minutes or 3 minutes, on a 2,048-GPU job (28 days of work)"] = (
        ["recovery", "budget R", "checkpoint τ", "interruptions", "recovery p95", "goodput (Daly)",
         "goodput (simulated, 95% CI)", "verdict"],
        [[r.label, duration(r.recovery_s), f"{r.tau_s / 60:.1f} min", f"{r.interruptions:.1f}",
          duration(r.recovery_p95_s), f"{100 * r.goodput_formula:.2f}%", _ci(r.goodput_ci), r.verdict]
         for r in rec])
    st.tables["Checkpoint cadence: Daly's exact expression against the simulated curve"] = (
        ["τ", "goodput (Daly exact)", "goodput (first order)", "goodput (simulated, 95% CI)", "verdict"],
        [[f"{r.tau_s / 60:.1f} min", f"{100 * r.goodput_formula:.2f}%", f"{100 * r.goodput_first_order:.2f}%",
          _ci(r.goodput_ci), r.verdict] for r in curve])
    st.tables["Spare pool: P(no spare when needed) < 1%"] = (
        ["nodes", "failures", "E[T] away", "spares planned", "P(no spare), finite source",
         "P(no spare), Poisson", "P(no spare), simulated", "failures simulated", "Erlang-B (lost-call view)"],
        [[f"{sp.nodes}", f"{sp.failures_per_day:.2f}/day ({sp.failures_per_day_with_spares:.2f} with spares)",
          f"{sp.out_of_service_days:.2f} d", f"{sp.spares}", f"{100 * sp.p_formula:.2f}%",
          f"{100 * sp.p_poisson:.2f}%", f"{_ci(sp.p_sim)}: {sp.p_sim.verdict(sp.p_formula)}",
          f"{sp.failures_simulated:,}", f"{100 * sp.erlang_b:.2f}%"]])
    st.tables["Pre-flight payoff: no gate, a 2-minute gate, a long diagnostic"] = (
        ["gate", "length", "catches", "bad caught", "bad admitted", "job GPU-h lost", "gate GPU-h",
         "total GPU-h", "job goodput"],
        [[g.label, duration(g.gate_s), f"{100 * g.catch:.0f}%", f"{g.caught:.1f}", f"{g.admitted_bad:.1f}",
          f"{g.lost_gpu_hours:,.0f}", f"{g.gate_gpu_hours:,.0f}",
          f"{g.lost_gpu_hours + g.gate_gpu_hours:,.0f}", f"{100 * g.goodput:.2f}%"] for g in gates])
    st.tables["Spot: waste per reclaim and the break-even discount"] = (
        ["τ", "δ", "waste (τ/2 + R)", "waste (exact)", "waste (simulated)", "reclaims", "d* (first order)",
         "d* (exact, λW)", "d* (simulated, 95% CI)", "verdict"],
        [[f"{r.tau_s / 60:.0f} min", f"{r.delta_s:.0f} s", duration(r.waste_formula_s),
          duration(r.waste_exact_s), duration(r.waste_sim_s), f"{r.reclaims:,}",
          f"{100 * r.discount_formula:.2f}%", f"{100 * r.discount_exact:.2f}%", _ci(r.discount_ci), r.verdict]
         for r in spot])
    st.tables["Spot gangs: break-even discount by gang size"] = (
        ["gang (nodes)", "time between reclaims", "d* first order (τ = 1 h)", "d* exact (τ = 1 h)",
         "best τ (exact)", "d* exact at best τ"], gang_break_even_rows())
    st.tables["Elastic training: shrink on a failure instead of stopping"] = (
        ["gang", "interruptions", "shrinks", "time below full size", "goodput (simulated, 95% CI)",
         "goodput (formula)", "verdict"],
        [[e.label, f"{e.interruptions:.1f}", f"{e.shrinks:.1f}", f"{e.hours_below_full:,.0f} h",
          _ci(e.goodput_ci, ".1f"), "" if e.goodput_formula is None else f"{100 * e.goodput_formula:.1f}%",
          e.verdict] for e in elastic])
    return st


def reliability_section(summaries: Mapping[str, dict], cfg: FailureConfig,
                        studies: Studies | None = None) -> Section:
    """The run's reliability figures, then the formula-vs-simulation studies at the run's failure
    rates; a run with failures off (``failure_scale: 0``) has no rate to study (an infinite MTTI
    makes Daly's interval infinite), so its studies use the Llama 3 rates and say so. Every
    simulated figure is a mean over seeds with its 95% interval, and "agrees" only when the
    formula lies inside it."""
    st = studies if studies is not None else reliability_studies(cfg)
    off, young, daly, curve = st.off, st.young, st.daly, st.curve
    tabs = list(st.tables.values())
    rec_tab, curve_tab, spare_tab, gate_tab, spot_tab, gang_tab, elastic_tab = tabs
    arith = (
        "job MTTI   M = 1 / (N r) = 1 / (256 nodes × 3.789e-3 per node-day) = 1.031 d = 24.7 h\n"
        "Daly τ*    = √(2δM)·[1 + ⅓√(δ/2M) + (δ/2M)/9] − δ, δ = 30 s → 2,292 s = 38.2 min\n"
        "goodput    = T_s / T_w = τ / (M e^{R/M} (e^{(τ+δ)/M} − 1))\n"
        "  R = 1,800 s (30-minute: NCCL timeout 600 + teardown 300 + cold node 300 + load 600) → 95.48%\n"
        "  R =   180 s (3-minute: DCGM watch 30 + teardown 30 + hot spare 60 + in-memory load 60) → 97.23%\n"
        "first order: waste ≈ δ/τ + (τ+δ)/2M + R/M = 1.31% + 1.30% + (2.02% or 0.20%)"
    )
    upgrade_rows: list[list[object]] = []
    for w in (20, 50, 100, 200, 500):
        p = upgrade_plan(2000, w, 20, 480.0, 1800.0, 300.0, 3600.0, 0.01, 0.5, 0.25)
        upgrade_rows.append([f"{w}", f"{p.waves}", f"{p.rollout_s / 3600:.1f} h",
                             f"{p.max_out} ({100 * p.max_out / 2000:.1f}%)",
                             f"{p.node_out_s * 8 / 3600:,.0f}"])
    zone_rows: list[list[object]] = []
    for n in (1, 8, 32):
        hit = 1 - math.comb(64 - n, 32) / math.comb(64, 32)
        zone_rows.append([f"{n}", f"{4 * hit:.2f}", f"{n * 4 * 32 / 64:.1f}"])
    html = (
        ("<p><b>This run had failures off (failure_scale 0)</b>; the studies below use the Llama 3 "
         "rates.</p>" if off else "")
        + "<p>Failures at Meta's Llama 3 rates (419 unexpected interruptions in 54 days on 2,048 8-GPU "
        "hosts: 3.79 per 1000 node-days), grouped by kind; the same seeded failure stream for every "
        "policy. Each failed node walks the health machine (suspect → draining → quarantined → "
        "diagnosing → repaired or RMA → pre-flight → healthy); a gang with a rank on it stops and "
        "restarts from its last checkpoint on a replacement.</p>"
        f"{_policy_table(summaries)}"
        "<h3>Recovery: 30 minutes or 3 minutes, on a 2,048-GPU job (28 days of work)</h3>"
        + table(*rec_tab)
        + f'<div class="arith">{arith}</div>'
        "<h3>Checkpoint cadence: Young/Daly against the simulated curve</h3>"
        "<p>A 64-node gang at 20× the Llama 3 rate (M = 4.95 h, enough failures for a curve), "
        "δ = 60 s, 3-minute recovery, 10 seeds per point (the same seeds at every τ). The formula is "
        "Daly's exact expected wall time T_w = M e^{R/M}(e^{(τ+δ)/M} − 1) T_s/τ, whose minimum is at "
        f"τ = M[1 + W₀(−e^{{−1−δ/M}})] = {st.daly_exact / 60:.2f} min (Lambert W; Daly's higher-order "
        f"estimate {daly / 60:.2f} min, Young's √(2δM) {young / 60:.2f} min). The first-order goodput "
        "1 − δ/τ − (τ+δ)/2M − R/M is shown beside it; it drifts below the exact one at long τ.</p>"
        + img(_cadence_plot(young, daly, curve), "goodput over checkpoint interval")
        + table(*curve_tab)
        + "<h3>Spare pool: P(no spare when needed) &lt; 1%</h3>"
        "<p>Finite source: the N + s nodes fail independently at r while up (idle spares too) and a "
        "node away for repair cannot fail again, so the number away is Binomial(N + s, p), "
        "p = r E[T]/(1 + r E[T]); an in-service failure finds the pool empty with "
        "Σ_{d≥s} π(d)(M−d) / Σ_d π(d) min(N, M−d). Poisson over the pool (a node away failing again) "
        "beside it. E[T] mixes repair in place (4 h) and RMA (14 d, an assumption) by kind. "
        "Simulated over 4 seeds × 40 years with the planned pool: mean and 95% interval.</p>"
        + table(*spare_tab)
        + "<h3>Pre-flight payoff: no gate, a 2-minute gate, a long diagnostic</h3>"
        "<p>A 64-node gang at 10× the Llama 3 rate with 8 spares; 30% of repaired nodes come back "
        "still bad and fail 10 minutes into their first load (a failed gang start) unless the gate "
        "catches them. Catch rates are assumptions (2-minute DCGM r2 ≈ 70%; 1-hour r3 + NCCL tests "
        "≈ 95%). The gate's own cost is the node's GPUs idle while it runs. Mean of 3 seeds.</p>"
        + table(*gate_tab)
        + "<h3>Spot: waste per reclaim and the break-even discount</h3>"
        "<p>Single-node jobs on spot nodes reclaimed once a day (120 s notice; the 300 s checkpoint does "
        "not fit it), restart R = 300 s. Waste per reclaim = (τ+δ)/2 + R to first order; the renewal-"
        "exact mean is lower when τ is a fair share of the time between reclaims. Break-even discount "
        "d* = 1 − u_spot/u_od against an on-demand node that checkpoints too. A checkpoint that fits in "
        "the notice (δ ≤ 120 s) cuts the waste to the notice + R. 100 jobs × 15 days per cadence, 6 seeds; "
        "the interval is over seeds.</p>"
        + table(*spot_tab)
        + "<p>The gang arithmetic: a gang of n spot nodes is reclaimed n times as often, so the discount "
        "it needs grows with n (δ = 300 s, R = 300 s, one reclaim per node-day). Where τ approaches "
        "the time between reclaims the first-order τ/2 + R is outside where it holds, so the table "
        "uses the renewal-exact waste E[X mod τ'] + R, at τ = 1 h and at the interval that maximises "
        "the gang's useful share (first order beside it for comparison). Gangs whose break-even "
        "discount exceeds what spot offers must never run on spot.</p>"
        + table(*gang_tab)
        + "<h3>Elastic training: shrink on a failure instead of stopping</h3>"
        "<p>A 32-node gang (10 days of work, τ = 30 min, δ = 30 s, R = 60 s) at 20× the Llama 3 rate, "
        "repairs by the health machine (E[T] = 3.77 d). A rigid gang stops at each failure and waits "
        "for a node; the elastic one (min 16 nodes) restarts at once on the nodes left, at "
        "k/32 of full speed, and grows back by a gang delta when a node returns. Formula: goodput = "
        "Ā · τ/(τ+δ) · [1 − Λ((τ+δ)/2 + detect + teardown + R + δ + R)], Ā = node availability over "
        "the run (it starts with every node up), Λ = N r Ā. Mean of 8 seeds with its 95% interval.</p>"
        + table(*elastic_tab)
        + "<h3>Driver-upgrade waves on 2,000 nodes</h3>"
        "<p>Canary of 20 nodes watched 1 h, 8 min per node, jobs saving every 30 min drained at their "
        "next checkpoint or after 300 s (<code>gpufleet plan upgrade</code>; fleet_events/upgrade.py replays "
        "a plan with failures on). Every node is out once, so the GPU-hours are the same for every wave; the "
        "wave size trades the rollout's length against the capacity out at once. With 1% of upgrades "
        "failing validation, a rollback on more than 25% of the canary failing has P = 3.4e-8 with a "
        "good driver and catches a driver that fails half its nodes with P = 0.979.</p>"
        + table(["wave (nodes)", "waves", "rollout", "most out at once", "GPU-h out"], upgrade_rows)
        + "<h3>Zone-correlated spot reclaims</h3>"
        "<p>A capacity event takes half of a zone's 64 spot nodes at once, 4 events a day: each node is "
        "reclaimed 2 times a day, as with independent reclaims at that rate, but a gang of n nodes is "
        "hit at most once per event, P = 1 − C(64−n, 32)/C(64, 32), and every gang of the zone together "
        "(tests/unit/sim/fleet_events/test_spot_zones.py checks both by simulation).</p>"
        + table(["gang (nodes)", "hits per running day, zone events", "independent reclaims (n × 2)"],
                zone_rows)
    )
    return Section("Reliability: failures, recovery, checkpoints, spares", html)
