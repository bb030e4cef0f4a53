"""Which nodes a job's image may run on while a driver rollout is under way.

A job says what its image carries by labels: ``("cuda", "13.0")``, the CUDA toolkit it was built
with, and ``("nccl", "2.27.3+cuda12.9")``, its NCCL build — ``Job.labels`` exists already and
JSON-lines traces already read them (``"labels": {"cuda": "13.0"}``), so no new field touches the
model, the engine or the trace format. The rollout (fleet_events/upgrade.py) knows every node's driver
(``UpgradeState.driver``: a mixed fleet starts with several). Before each engine cycle, every
pending labelled job whose image the compatibility matrix (model/driver_compat.py ``image_compat``)
rejects on some node's driver gets a node filter (``Job.eligible_nodes``) holding the nodes whose
driver runs it:

- runs on every node's driver: unrestricted (None), so the engine decides exactly as without a
  label;
- ``no`` on the old driver (e.g. CUDA 13.0 on 550.54.14 < 580 floor): upgraded nodes only — none
  before the first wave, so it waits for the rollout;
- ``no`` on the new driver (a rollout to an older driver, e.g. a rollback from 580 to 550): old
  nodes only; no driver at all: no node (it waits; ``plan upgrade`` calls it "nowhere").

The filter is intersected with the job's own (its trace's ``eligible_nodes``). Each cycle looks
only at jobs that (re)joined the queue since the last (``SimulatedCluster.entered``), and at the
restricted ones when a node changed driver: not at every pending job. A requeued job (drained by
a wave, failed, preempted) is pending again, so it meets the filter of the nodes' drivers at its
next cycle. A running job is never moved: its node changes driver only after the wave drains it.

Held back by the driver (summary ``driver_held_jobs``, ``driver_wait_gpu_hours``,
``driver_blocked_gpu_hours``): a job is *held* while it is pending with a restricting filter, and
*blocked* while no node at all runs its image. Its GPUs × the seconds it spent so, from the cycle
that restricted it to the cycle that started it (jobs start only at cycles, so the last cycle
before it left the queue is its start) or the end of the run. Held time is an upper bound of the
wait the matrix caused (the job might have waited for capacity anyway); blocked time is all the
matrix's doing.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpufleet.model.driver_compat import image_compat

if TYPE_CHECKING:
    from gpufleet.sim.fleet_events.upgrade import UpgradeState

#: The job labels naming its image's CUDA toolkit (major.minor) and NCCL build.
CUDA_LABEL = "cuda"
NCCL_LABEL = "nccl"


def image_of(labels: tuple[tuple[str, str], ...]) -> tuple[str | None, str | None] | None:
    """(cuda, nccl) the job's labels give its image, or None when they name neither."""
    cuda = nccl = None
    for k, v in labels:
        if k == CUDA_LABEL:
            cuda = v
        elif k == NCCL_LABEL:
            nccl = v
    return None if cuda is None and nccl is None else (cuda, nccl)


@dataclass
class HeldBack:
    """One job held back by the matrix: since when, its GPUs, and whether no node runs it."""

    since: float
    gpus: int
    blocked: bool


@dataclass
class CompatFilter:
    """Per-run cache: verdicts per (image, driver), node names per driver, each job's own filter."""

    #: (cuda, nccl, driver) → the image runs there.
    verdicts: dict[tuple[str | None, str | None, str], bool] = field(default_factory=dict)
    seq: int = -1
    by_driver: dict[str, frozenset[str]] = field(default_factory=dict)
    #: The filter each touched job had of its own (from its trace), by job id.
    own: dict[str, frozenset[str] | None] = field(default_factory=dict)
    #: Pending jobs whose image does not run on every driver: the only ones a driver change moves.
    restricted: set[str] = field(default_factory=set)
    #: Held-back accounting (module docstring): open intervals, totals, the last cycle's time.
    held: dict[str, HeldBack] = field(default_factory=dict)
    held_ever: set[str] = field(default_factory=set)
    wait_gpu_s: float = 0.0
    blocked_gpu_s: float = 0.0
    last_t: float = 0.0


def runs_on(us: UpgradeState, image: tuple[str | None, str | None], driver: str, cache: CompatFilter) -> bool:
    key = (image[0], image[1], driver)
    v = cache.verdicts.get(key)
    if v is None:
        v = cache.verdicts[key] = image_compat(image[0], image[1], driver,
                                               forward_compat=us.cfg.forward_compat)[0] != "no"
    return v


def _close(cache: CompatFilter, jid: str, t: float) -> None:
    h = cache.held.pop(jid, None)
    if h is not None:
        if t > h.since:  # it did wait: a job restricted and started in the same cycle did not
            cache.held_ever.add(jid)
        gpu_s = h.gpus * max(0.0, t - h.since)
        cache.wait_gpu_s += gpu_s
        if h.blocked:
            cache.blocked_gpu_s += gpu_s


def close_all(us: UpgradeState, t: float, pending: Container[str]) -> None:
    """End of the run: a job still pending has waited until ``t``, one that left the queue since
    the last cycle started at it; the totals go to the rollout's ledger (summary.json)."""
    cache = us.compat
    for jid in list(cache.held):
        _close(cache, jid, t if jid in pending else cache.last_t)
    led = us.ledger
    led.driver_held_jobs = len(cache.held_ever)
    led.driver_wait_gpu_s = cache.wait_gpu_s
    led.driver_blocked_gpu_s = cache.blocked_gpu_s


def restrict(st) -> None:  # noqa: ANN001 (SimState)
    """Give each pending labelled job the node filter of the drivers its image runs on."""
    fs = st.fail
    us = fs.upgrade if fs is not None else None
    if us is None or not us.drivers_known:
        return
    cache: CompatFilter = us.compat
    cluster = st.cluster
    names = cluster.table.names
    for jid in [j for j in cache.held if j not in cluster.pending]:
        _close(cache, jid, cache.last_t)  # it started at the last cycle
    cache.last_t = st.t
    # on the first call every job queued so far is new to the filter
    check = list(cluster.pending) if cluster.entered is None else cluster.entered
    cluster.entered = []
    if cache.seq != us.drivers_seq:  # nodes changed driver: every restricted job again
        cache.seq = us.drivers_seq
        groups: dict[str, list[str]] = {}
        for i, d in enumerate(us.driver):
            groups.setdefault(d, []).append(names[i])
        cache.by_driver = {d: frozenset(n) for d, n in groups.items()}
        cache.restricted = {j for j in cache.restricted if j in cluster.pending}
        check = [*check, *sorted(cache.restricted)]
    everyone = len(names)
    for jid in check:
        job = cluster.pending.get(jid)
        if job is None:
            continue
        image = image_of(job.labels)
        if image is None:
            continue
        try:  # every driver a node may run during the run, not only those running now
            ok = {d for d in us.drivers_ever if runs_on(us, image, d, cache)}
        except ValueError as e:
            label = NCCL_LABEL if str(e).startswith("nccl") else CUDA_LABEL
            raise ValueError(f"job {jid}: label {label}: {e}") from None
        if len(ok) == len(us.drivers_ever):
            allowed = None
        else:  # a driver change may move it: revisit it then
            cache.restricted.add(jid)
            allowed = frozenset().union(*(n for d, n in cache.by_driver.items() if d in ok))
        if allowed is not None and len(allowed) == everyone:
            allowed = None  # every node runs it now (the rollout is over)
        if allowed is None:
            _close(cache, jid, st.t)
        else:
            h = cache.held.get(jid)
            if h is None or h.blocked != (not allowed):
                _close(cache, jid, st.t)
                cache.held[jid] = HeldBack(st.t, job.total_gpus, not allowed)
        own = cache.own.setdefault(jid, job.eligible_nodes)
        target = allowed if own is None else (own if allowed is None else own & allowed)
        if job.eligible_nodes is target or job.eligible_nodes == target:
            continue
        cluster.replace_pending(replace(job, eligible_nodes=target))
