"""The Slurm parts of ``gpufleet simulate``: ``--policy slurm --slurm-conf FILE`` and, for a trace
from ``gpufleet slurm import-sacct``, what Slurm actually did beside the simulated policies."""

from __future__ import annotations

from pathlib import Path

from gpufleet.cli.common import Table, console, fail
from gpufleet.engine.profile import Profile
from gpufleet.model.fleet import Fleet
from gpufleet.report.html import Section, table
from gpufleet.sim.runner import SimResult

SLURM_POLICY = "slurm"


def slurm_profiles(policies: list[str], slurm_conf: Path | None, fleet: Fleet
                   ) -> dict[str, tuple[Profile, float]]:
    """``{"slurm": (profile, bf_interval)}`` when asked for; one clear error when half-asked."""
    if SLURM_POLICY not in policies:
        if slurm_conf is not None:
            raise fail("--slurm-conf: only used by --policy slurm; add --policy slurm")
        return {}
    if slurm_conf is None:
        raise fail("--policy slurm: expected --slurm-conf FILE (its priority weights and "
                   "SchedulerParameters configure the policy)")
    from gpufleet.adapters.slurm.conf import read_slurm_conf
    from gpufleet.adapters.slurm.settings import profile_from_conf

    conf = read_slurm_conf(slurm_conf)
    if not conf.settings and not conf.nodes:
        # an empty conf would silently replay with Slurm's defaults (zero weights: plain FIFO)
        raise fail(f"{slurm_conf}: no Key=Value lines (expected a slurm.conf with the cluster's "
                   "Priority* weights and SchedulerParameters)")
    setup = profile_from_conf(conf, fleet)
    return {SLURM_POLICY: (setup.profile, setup.cycle_interval_s)}


def actual_rows(trace: Path | None, results: dict[str, SimResult]) -> list[dict[str, object]]:
    """What Slurm did with the trace's jobs beside each policy; [] for a trace without that record."""
    if trace is None:
        return []
    from gpufleet.report.slurm_compare import ACTUAL_COLUMNS, actual_vs_simulated
    from gpufleet.traces.slurm_sacct import read_actual

    actual = read_actual(trace)
    if not actual:
        return []
    rows = actual_vs_simulated(actual, {name: r.starts for name, r in results.items()})
    return [dict(zip(ACTUAL_COLUMNS, row, strict=True)) for row in rows]


def actual_section(rows: list[dict[str, object]]) -> Section:
    """The same rows for report.html."""
    note = ("<p>Slurm's row is what it did with these jobs (sacct's Start − Submit); each policy's row is "
            "its simulated schedule of the same jobs, and how close its start order comes to Slurm's.</p>")
    return Section("What Slurm did", table(list(rows[0]), [list(r.values()) for r in rows]) + note)


def print_actual(rows: list[dict[str, object]]) -> None:
    t = Table(title="What Slurm did with these jobs, beside each simulated policy")
    for col in rows[0]:
        t.add_column(col, justify="left" if col == "schedule" else "right")
    for row in rows:
        t.add_row(*(str(v) for v in row.values()))
    console.print(t)
