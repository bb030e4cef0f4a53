"""Slurm's scheduling settings from a slurm.conf, and the Slurm-like profile they configure.

What is read (defaults are Slurm 22.05's, from slurm.conf(5)):

* priority/multifactor weights: ``PriorityWeightJobSize``, ``PriorityWeightAge``,
  ``PriorityWeightPartition`` (0 each, and all 0 unless ``PriorityType=priority/multifactor``),
  ``PriorityFavorSmall`` (NO), ``PriorityMaxAge`` (7-0, i.e. 7 days), ``PriorityCalcPeriod``
  (5 minutes); durations in ``[D-]HH:MM:SS``, ``D-HH``, ``MM:SS`` or bare minutes;
* the backfill scheduler's ``SchedulerParameters``: ``bf_interval`` (30 s between passes),
  ``bf_window`` (1440 minutes: no job is planned further ahead), ``bf_resolution`` (60 s: each
  planned job's hold on its nodes is rounded down to that grid, its reported start is not; see
  policies/backfill.ShadowReserver.resolution_s), ``bf_max_job_test`` (500 jobs planned per pass).

``profile_from_conf`` is what ``gpufleet simulate --policy slurm --slurm-conf FILE`` and
``gpufleet slurm compare`` run: ``bf_interval`` becomes the cycle interval, ``bf_max_job_test``
the reservation depth, ``bf_window`` the horizon past which no job is promised a start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.adapters.slurm.conf import SlurmConf
from gpufleet.engine.profile import Profile
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fleet
from gpufleet.policies.slurm_like import SlurmPriority, slurm_like_profile

MAX_AGE_DEFAULT_S = 7 * 86400.0
CALC_PERIOD_DEFAULT_S = 300.0


def duration_s(conf: SlurmConf, key: str, default_s: float, unit_s: float = 60.0) -> float:
    """A slurm.conf duration: ``[D-]HH:MM:SS``, ``D-HH``, ``MM:SS`` or a bare number of ``unit_s``."""
    text = (conf.setting(key) or "").strip()
    if not text:
        return default_s
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not m:
        raise InputError("slurm.conf", key, f"expected a duration such as 7-0 or 00:10:00, got {text!r}")
    days, a, b, c = m.groups()
    if b is None:
        return int(days or 0) * 86400 + int(a) * (3600 if days else unit_s)
    if c is None:
        return int(days or 0) * 86400 + int(a) * 60 + int(b)
    return int(days or 0) * 86400 + int(a) * 3600 + int(b) * 60 + int(c)


def _weight(conf: SlurmConf, key: str) -> float:
    text = (conf.setting(key) or "0").strip()
    if not text.isdigit():
        raise InputError("slurm.conf", key, f"expected a whole number, got {text!r}")
    return float(text)


@dataclass(frozen=True)
class BackfillSettings:
    """The backfill scheduler's ``SchedulerParameters`` (seconds; window in seconds too)."""

    interval_s: float = 30.0
    window_s: float = 1440 * 60.0
    resolution_s: float = 60.0
    max_job_test: int = 500
    #: ``bf_continue``: a pass goes on after releasing its locks instead of starting over.
    continue_: bool = False

    @classmethod
    def from_conf(cls, conf: SlurmConf) -> BackfillSettings:
        params = conf.scheduler_params()

        def number(key: str, default: float, high: int) -> float:
            if key not in params:
                return default
            value = params[key]
            # atoi(): leading digits; Slurm logs values outside its range and keeps the default
            m = re.match(r"\s*(\d+)", value)
            if not m or not 1 <= int(m.group(1)) <= high:
                raise InputError("slurm.conf", f"SchedulerParameters: {key}",
                                 f"expected a whole number from 1 to {high}, got {value!r}")
            return float(m.group(1))

        # upper bounds: Slurm 22.05's backfill.c (MAX_BACKFILL_INTERVAL 10800 s, bf_window 43200
        # min, bf_resolution 3600 s); bf_max_job_test is unbounded there, one million here
        return cls(interval_s=number("bf_interval", 30.0, 10800),
                   window_s=number("bf_window", 1440.0, 43200) * 60.0,
                   resolution_s=number("bf_resolution", 60.0, 3600),
                   max_job_test=int(number("bf_max_job_test", 500, 1_000_000)),
                   continue_="bf_continue" in params)


def priority_from_conf(conf: SlurmConf, fleet: Fleet, phase_s: float = 0.0) -> SlurmPriority:
    """Slurm's multifactor weights from slurm.conf; zero weights when multifactor is off."""
    multifactor = (conf.setting("PriorityType") or "").strip().lower().endswith("multifactor")

    def weight(key: str) -> float:
        return _weight(conf, key) if multifactor else 0.0

    return SlurmPriority(
        nodes=len(fleet.nodes), cpus=sum(n.cpus for n in fleet.nodes),
        weight_size=weight("PriorityWeightJobSize"), weight_age=weight("PriorityWeightAge"),
        weight_partition=weight("PriorityWeightPartition"),
        max_age_s=duration_s(conf, "PriorityMaxAge", MAX_AGE_DEFAULT_S),
        calc_period_s=duration_s(conf, "PriorityCalcPeriod", CALC_PERIOD_DEFAULT_S),
        phase_s=phase_s,
        favor_small=(conf.setting("PriorityFavorSmall") or "NO").strip().upper() in ("YES", "TRUE", "1"),
    )


@dataclass(frozen=True)
class SlurmSetup:
    """What a replay under Slurm's rules needs: the profile and its cycle interval."""

    profile: Profile
    cycle_interval_s: float
    priority: SlurmPriority
    backfill: BackfillSettings


def profile_from_conf(conf: SlurmConf, fleet: Fleet, *, backfill: str = "conservative",
                      phase_s: float = 0.0, slurm_nodes: bool = False,
                      epoch_s: float = 0.0) -> SlurmSetup:
    """The Slurm-like profile configured by ``conf`` (see the module docstring); ``slurm_nodes``
    picks nodes as select/cons_tres does instead of gang best fit; ``epoch_s`` is the epoch second
    of sim time 0, which puts the bf_resolution grid where Slurm's falls."""
    prio = priority_from_conf(conf, fleet, phase_s)
    bf = BackfillSettings.from_conf(conf)
    profile = slurm_like_profile(prio, backfill, depth=bf.max_job_test, window_s=bf.window_s,
                                 slurm_nodes=slurm_nodes,
                                 node_weights={str(n.id): n.weight for n in fleet.nodes},
                                 resolution_s=bf.resolution_s, epoch_s=epoch_s)
    return SlurmSetup(profile, bf.interval_s, prio, bf)
