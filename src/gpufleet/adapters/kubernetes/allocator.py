"""Allocate a DRA claim on one node with the structured-parameters semantics.

Every device given to a request matches the request's DeviceClass selectors and its own
selectors (CEL, all must be true); ``ExactCount`` takes ``count`` free devices, ``All`` takes
every matching device of the node and fails if any of them is already allocated (``adminAccess``
requests may use allocated devices and do not take them). A ``matchAttribute`` constraint makes
every device of the requests it names (all requests when empty) carry the same value of that
fully-qualified attribute; a device without the attribute is never chosen for them. A device that
``consumesCounters`` needs that much left in its pool's counter set (partitionable devices: the
MIG placements of one GPU share its memory slices, so taking a 3g.40gb removes the placements
that overlap it).

``firstAvailable``: a request's subrequests are tried in the user's order — every choice of
subrequests, earlier requests' earlier subrequests first — and the first choice under which the
whole claim can be allocated wins (results named "request/subrequest", as the API records them).
A ``matchAttribute`` constraint naming the request applies to whichever subrequest is chosen.

Search: requests in order; for a constrained request, the attribute's values are tried in sorted
order (the first request fixes the value for the rest), devices in name order, with backtracking
over values and over the choice of devices inside a value when counters run out. Up to
``MAX_SOLUTIONS`` allocations are found and the **best fit** is kept: the one after which the
fewest of the node's other free devices become unallocatable (their shared counters no longer
cover them — e.g. a small MIG placement on an already split GPU rather than on a whole one,
which would strand the whole-GPU device); ties go to the first found. kube-scheduler's
allocator returns the first allocation it finds; this one is a planner, so it prefers the fit
that strands least.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations, islice, product

from gpufleet.adapters.kubernetes.cel import device_activation, matches
from gpufleet.adapters.kubernetes.dra import Claim, Device, Request

MAX_COMBINATIONS = 2000
MAX_SOLUTIONS = 64      # allocations compared for the best fit
MAX_CHOICES = 64        # firstAvailable subrequest choices tried


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    devices: dict[str, tuple[Device, ...]]
    reason: str = ""


def selected(d: Device, req: Request, classes: dict[str, tuple[str, ...]]) -> bool:
    """Whether ``d`` satisfies the class and request selectors (a CEL error aborts: SelectorError)."""
    exprs = classes.get(req.device_class)
    if exprs is None:
        return False
    act = device_activation(d.driver, *d.by_domain())
    return all(matches(e, act) for e in (*exprs, *req.selectors))


def _counters_fit(chosen: Iterable[Device], remaining: dict) -> dict | None:
    left = {k: dict(v) for k, v in remaining.items()}
    for d in chosen:
        for cset, counts in d.consumes:
            k = (d.driver, d.pool, cset)
            if k not in left:
                return None
            for name, amount in counts:
                if left[k].get(name, 0) < amount:
                    return None
                left[k][name] -= amount
    return left


def allocate(claim: Claim, devices: list[Device], classes: dict[str, tuple[str, ...]],
             used: set[tuple[str, str, str]], counters: dict) -> Outcome:
    """Devices for every request of ``claim`` among ``devices`` (one node's), or why not.

    ``used`` holds keys of allocated devices; ``counters`` the remaining counter values per
    (driver, pool, counter set) after them."""
    first: Outcome | None = None
    for choice in islice(product(*[r.alternatives or (r,) for r in claim.requests]), MAX_CHOICES):
        out = _allocate(claim, list(choice), devices, classes, used, counters)
        if out.ok:
            return out
        first = first or out
    return first or Outcome(False, {}, "claim has no requests")


def _parent(name: str) -> str:
    return name.split("/", 1)[0]


def _allocate(claim: Claim, requests: list[Request], devices: list[Device],
              classes: dict[str, tuple[str, ...]], used: set[tuple[str, str, str]],
              counters: dict) -> Outcome:
    missing = [r.device_class for r in requests if r.device_class not in classes]
    if missing:
        return Outcome(False, {}, f"DeviceClass {missing[0]} not found")
    cands: dict[str, list[Device]] = {}
    for r in requests:
        match = sorted((d for d in devices if selected(d, r, classes)), key=lambda d: d.name)
        if r.mode == "All":
            taken = [d for d in match if d.key in used]
            if not match:
                return Outcome(False, {}, f"request {r.name}: no device matches (allocationMode All)")
            if taken and not r.admin_access:
                return Outcome(False, {}, f"request {r.name}: {len(taken)} of {len(match)} matching "
                                          "device(s) already allocated (allocationMode All)")
        elif not r.admin_access:
            match = [d for d in match if d.key not in used]
        cands[r.name] = match
    constraint_of: dict[str, list[str]] = {r.name: [] for r in requests}
    for names, attr in claim.match_attributes:
        for r in requests:
            if not names or r.name in names or _parent(r.name) in names:
                constraint_of[r.name].append(attr)
    found: list[tuple[dict, dict]] = []
    _search(requests, cands, constraint_of, {}, counters, {}, found)
    if found:
        return Outcome(True, min(found, key=lambda f: _stranded(f, devices, used))[0])
    return Outcome(False, {}, _why(requests, cands, constraint_of))


def _stranded(found: tuple[dict, dict], devices: list[Device], used: set) -> int:
    """How many free devices, allocatable before, no longer fit their counters after ``found``."""
    chosen, left = found
    taken = {d.key for ds in chosen.values() for d in ds} | used
    return sum(1 for d in devices if d.key not in taken and d.consumes and _counters_fit([d], left) is None)


def _search(reqs: list[Request], cands: dict, constraint_of: dict, fixed: dict, counters: dict,
            chosen: dict, found: list) -> bool:
    """Collect allocations (chosen devices, counters left) into ``found``; True when enough."""
    if not reqs:
        found.append((dict(chosen), counters))
        return len(found) >= MAX_SOLUTIONS
    r, rest = reqs[0], reqs[1:]
    taken = {d.key for ds in chosen.values() for d in ds}
    pool = [d for d in cands[r.name] if d.key not in taken or r.admin_access]
    for attr in constraint_of.get(r.name, []):
        pool = [d for d in pool
                if attr in d.attributes and (attr not in fixed or d.attributes[attr] == fixed[attr])]
    need = len(pool) if r.mode == "All" else r.count
    if len(pool) < need:
        return False
    groups: dict[tuple, list[Device]] = {}
    for d in pool:
        groups.setdefault(tuple(d.attributes[a] for a in constraint_of.get(r.name, [])), []).append(d)
    for values in sorted(groups, key=repr):
        group = groups[values]
        if len(group) < need:
            continue
        for n, combo in enumerate(combinations(group, need)):
            if n >= MAX_COMBINATIONS:
                break
            left = counters if r.admin_access else _counters_fit(combo, counters)
            if left is None:
                continue
            fix = {**fixed, **dict(zip(constraint_of.get(r.name, []), values, strict=True))}
            if _search(rest, cands, constraint_of, fix, left, {**chosen, r.name: combo}, found):
                return True
    return False


def _why(requests: list[Request], cands: dict, constraint_of: dict) -> str:
    for r in requests:
        need = r.count if r.mode == "ExactCount" else 1
        if len(cands[r.name]) < need:
            return f"request {r.name}: {len(cands[r.name])} free matching device(s), needs {need}"
    if any(constraint_of.values()):
        attrs = sorted({a for v in constraint_of.values() for a in v})
        return f"no set of free devices shares {', '.join(attrs)} (matchAttribute)"
    return "the devices' shared counters are used up (partitionable devices)"


def counters_after(devices: list[Device], counters: dict, used: set[tuple[str, str, str]]) -> dict:
    """Counter values left once the allocated devices' consumption is taken off."""
    left = _counters_fit([d for d in devices if d.key in used], counters)
    return left if left is not None else {k: dict.fromkeys(v, 0) for k, v in counters.items()}
