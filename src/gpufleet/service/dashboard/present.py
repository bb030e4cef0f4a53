"""What each page says, built from the service's read views (gpufleet.live.views, .explain).

Nothing here decides or estimates: reasons, estimates and fixes are the engine's; this module
only picks which of them a page shows first and puts them into words.

Source time and the reader's clock: the live world runs on source seconds (``snap.now``). A page
shows an instant ``t`` as the wall-clock moment ``wall_now + (t − snap.now)``, so "in 2 h" means two
hours of the fleet's time (the same thing at ``--speed 1``; a demo at ``--speed 60`` passes them in
two minutes).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from markupsafe import Markup

from gpufleet.live import views
from gpufleet.live.explain import Explanation, explain
from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.service.dashboard.format import duration_words, plural, time_tag

#: The bounded pending reasons (views.REASONS) in words.
REASON_WORDS = {
    "quota": "over its queue's quota (admission refused)",
    "capacity": "no room for the whole gang now",
    "reservation": "waiting for its reserved start",
    "unresolvable": "can never fit this fleet",
    "not_examined": "not yet examined by a cycle",
    "held": "held by hand",
}
#: Where a queue's nominal comes from over Slurm (views.QueueView.nominal_basis), in words.
BASIS_WORDS = {"GrpTRES": "borrows up to its GrpTRES", "shares": "no GrpTRES: borrows freely"}
#: Reasons that mean work is blocked (a page with any of them is never green).
BLOCKED = ("quota", "capacity", "reservation", "unresolvable")


class Clock:
    """Source seconds → a ``<time>`` tag on the reader's clock."""

    def __init__(self, snap: LiveSnapshot, wall_now: float | None = None) -> None:
        self.source_now = snap.now
        self.wall_now = time.time() if wall_now is None else wall_now

    def wall(self, t: float | None) -> float | None:
        return None if t is None else self.wall_now + (t - self.source_now)

    def tag(self, t: float | None, hint: bool = True) -> Markup:
        return time_tag(self.wall(t), self.wall_now, hint=hint)


@dataclass(frozen=True)
class BiggestGang:
    job: views.JobView
    why: Explanation
    #: After the job's id: its size, why it waits, when it starts (HTML: the time is a tag).
    sentence: Markup


@dataclass(frozen=True)
class Overview:
    summary: views.FleetSummary
    tone: str                      # ok / warn / bad: the banner's colour
    headline: str
    biggest: BiggestGang | None
    blocked_jobs: int
    reasons: list[tuple[str, str, int]]   # (reason, words, count), largest first
    stranded_words: str
    cycle_words: str
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OverviewFacts:
    """What the Overview counts over the whole queue (~0.2 s at 100,000 pending), none of it
    depending on the time or the source's health: built once per snapshot contents
    (cache.py); ``overview`` adds the time, the health and the words."""

    summary: views.FleetSummary
    biggest: str | None


def biggest_id(snap: LiveSnapshot) -> str | None:
    """The pending job asking for the most GPUs (the earliest submitted, then the lowest id, of
    equals): the gang most likely to be stuck behind fragmentation."""
    if not snap.pending:
        return None
    jobs = list(snap.pending.values())
    gpus = [j.total_gpus for j in jobs]
    most = max(gpus)
    widest = [j for j, g in zip(jobs, gpus, strict=True) if g == most]   # few: the ties only
    return min(widest, key=lambda j: (j.submit_time, j.id)).id


def overview_facts(snap: LiveSnapshot) -> OverviewFacts:
    return OverviewFacts(views.fleet_summary(snap), biggest_id(snap))


def biggest_waiting(snap: LiveSnapshot, job_id: str | None = None) -> BiggestGang | None:
    """The biggest waiting gang (``biggest_id``) in one sentence: why it waits, when it starts."""
    job_id = job_id if job_id is not None else biggest_id(snap)
    job = snap.pending.get(job_id) if job_id is not None else None
    if job is None:
        return None
    view, why = views.job_view(snap, job.id), explain(snap, job.id)
    assert view is not None and why is not None
    clock = Clock(snap)
    first = why.chain[0] if why.chain else why.summary
    sentence = Markup("({}, {}, tenant {}) waits: {}.").format(
        plural(job.total_gpus, "GPU"), plural(job.total_pods, "pod"), job.tenant, first)
    if why.estimated_start is not None:
        sentence += Markup(" Estimated start {}").format(clock.tag(why.estimated_start))
        sentence += Markup(", from {}.").format(why.estimate_basis) if why.estimate_basis else "."
    else:
        sentence += " The engine gives it no start time yet."
    return BiggestGang(view, why, sentence)


def stranded_words(snap: LiveSnapshot, summary: views.FleetSummary) -> str:
    """Why free GPUs are stranded: how they are spread over nodes against the smallest pending pod."""
    g = summary.gpus
    if g.stranded <= 0:
        return "No free GPU is stranded: every free GPU could take a pending pod." if snap.pending \
            else "Nothing is pending, so no free GPU is stranded."
    t = snap.table
    free = Counter(int(f) for f, ok in zip(t.gpu_free, t.schedulable, strict=True) if ok and f > 0)
    spread = ", ".join(f"{plural(n, 'node')} with {f} free" for f, n in sorted(free.items()))
    asks = [ps.request.gpus for j in snap.shapes for ps in j.pod_sets if ps.request.gpus > 0]
    smallest = f"; the smallest pending pod asks for {plural(min(asks), 'GPU')}" if asks else ""
    return (f"{plural(g.stranded, 'free GPU')} no pending job can use: free GPUs sit as {spread}{smallest} "
            "(or the node lacks the CPUs, memory or GPU model it needs).")


def overview(snap: LiveSnapshot, facts: OverviewFacts | None = None) -> Overview:
    """The Overview at ``snap`` (its time and health), from ``facts`` counted over its contents."""
    facts = facts if facts is not None else overview_facts(snap)
    h = snap.health
    s = facts.summary.model_copy(update={
        "now": snap.now, "source_ok": h.ok, "source_detail": h.detail, "source_reachable": h.ok,
        "source_since": h.since, "source_last_error": h.last_error})
    blocked = sum(s.pending_by_reason.get(r, 0) for r in BLOCKED)
    reasons = sorted(((r, REASON_WORDS[r], n) for r, n in s.pending_by_reason.items() if n > 0),
                     key=lambda x: (-x[2], x[0]))
    big = biggest_waiting(snap, facts.biggest)
    problems = []
    if not s.source_ok:
        problems.append(f"The source ({s.source}) is unreachable: {s.source_detail or 'no answer'}. "
                        "What you see is its last known state.")
    if s.pending_by_reason.get("unresolvable", 0):
        problems.append(f"{plural(s.pending_by_reason['unresolvable'], 'job')} can never fit this fleet.")
    if s.gpus.unhealthy or s.gpus.drained:
        problems.append(f"{plural(s.gpus.unhealthy + s.gpus.drained, 'GPU')} on "
                        f"{plural(s.nodes_out_of_service, 'node')} out of service "
                        f"({s.gpus.unhealthy:,} unhealthy, {s.gpus.drained:,} drained or cordoned).")
    if problems and (not s.source_ok or s.pending_by_reason.get("unresolvable", 0)):
        tone = "bad"
    elif blocked:
        tone = "warn"
    else:
        tone = "bad" if problems else "ok"
    if blocked:
        headline = f"{plural(blocked, 'job')} blocked ({plural(s.pending_jobs, 'pending job')} in all)."
    elif s.pending_jobs:
        headline = f"{plural(s.pending_jobs, 'job')} pending, none blocked yet: the next cycle examines them."
    else:
        headline = f"No job is waiting; {plural(s.running_jobs, 'job')} running."
    age = snap.now - snap.last_cycle.at if s.cycles else None
    cycle = (f"{plural(s.cycles, 'cycle')} so far; the last took {snap.last_cycle.duration_s * 1000:.0f} ms, "
             f"{duration_words(age)} ago (fleet time)" if age is not None else "No cycle has run yet.")
    return Overview(s, tone, headline, big, blocked, reasons, stranded_words(snap, s), cycle, problems)


@dataclass(frozen=True)
class Bar:
    """A quota bar: in use within nominal, borrowed above it, lendable (nominal not used), scaled
    to the largest of nominal + borrowing limit and usage."""

    flavor: views.FlavorUsage
    used_pct: float
    borrowed_pct: float
    lendable_pct: float
    scale: int


def bar(f: views.FlavorUsage) -> Bar:
    top = max(1, f.nominal + (f.borrowing_limit or 0), f.usage)
    within = min(f.usage, f.nominal)
    return Bar(f, 100 * within / top, 100 * f.borrowed / top, 100 * f.lendable / top, top)


@dataclass(frozen=True)
class CohortGroup:
    name: str
    queues: list[tuple[views.QueueView, list[Bar]]]


def queue_tree(queues: list[views.QueueView], tenant_first: str | None = None) -> list[CohortGroup]:
    """Queues (``views.queues``) grouped by cohort (no cohort last); a member's own queue first
    in its group, and its group first."""
    groups: dict[str, list] = {}
    for q in queues:
        groups.setdefault(q.cohort or "", []).append((q, [bar(f) for f in q.flavors]))
    def key(item: tuple[str, list]) -> tuple[bool, bool, str]:
        name, qs = item
        return (not any(q.name == tenant_first for q, _ in qs), name == "", name)
    out = []
    for name, qs in sorted(groups.items(), key=key):
        qs.sort(key=lambda x: (x[0].name != tenant_first, x[0].name))
        out.append(CohortGroup(name or "(no cohort)", qs))
    return out


@dataclass(frozen=True)
class Leaf:
    name: str
    nodes: list[views.NodeView]


@dataclass(frozen=True)
class Spine:
    name: str
    leaves: list[Leaf]


def node_class(n: views.NodeView) -> str:
    """A map cell's colour class: out of service, sick, or by free GPUs (none / some / all)."""
    if n.state in ("fail", "down") or n.health != "healthy":
        return "sick"
    if n.state != "up":
        return "drained"
    if n.gpus_free == 0:
        return "f0"
    return "f2" if n.gpus_free == n.gpus else "f1"


def fleet_map(snap: LiveSnapshot) -> tuple[list[Spine], str]:
    nodes = views.nodes(snap)
    spines: dict[str, dict[str, list[views.NodeView]]] = {}
    for n in nodes:
        spines.setdefault(n.spine, {}).setdefault(n.leaf, []).append(n)
    tree = [Spine(s, [Leaf(leaf, ns) for leaf, ns in sorted(ls.items())]) for s, ls in sorted(spines.items())]
    up = [n for n in nodes if n.state == "up"]
    free = sum(n.gpus_free for n in up)
    whole = [n for n in up if n.gpus_free == n.gpus and n.gpus > 0]
    per = max((n.gpus for n in whole), default=0)
    fits = (f"the largest whole-node gang that fits now is {plural(len(whole), 'node')} × {per} GPUs "
            f"({len(whole) * per} GPUs)") if whole \
        else "no whole node is free, so no whole-node gang fits now"
    return tree, f"{plural(free, 'GPU')} free on nodes in service; {fits}."
