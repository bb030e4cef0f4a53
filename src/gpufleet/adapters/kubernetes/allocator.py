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

Search: requests in order; for a constrained request, the attribute's values are tried in sorted
order (the first request fixes the value for the rest), devices in name order, with backtracking
over values and over the choice of devices inside a value when counters run out. The answer is
the first allocation found (kube-scheduler's allocator also returns the first, not the best).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from gpufleet.adapters.kubernetes.cel import device_activation, matches
from gpufleet.adapters.kubernetes.dra import Claim, Device, Request

MAX_COMBINATIONS = 2000


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
    missing = [r.device_class for r in claim.requests if r.device_class not in classes]
    if missing:
        return Outcome(False, {}, f"DeviceClass {missing[0]} not found")
    cands: dict[str, list[Device]] = {}
    for r in claim.requests:
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
    constraint_of: dict[str, list[str]] = {r.name: [] for r in claim.requests}
    for names, attr in claim.match_attributes:
        for rn in names or [r.name for r in claim.requests]:
            constraint_of.setdefault(rn, []).append(attr)
    result = _search(list(claim.requests), cands, constraint_of, {}, counters, {})
    if result is not None:
        return Outcome(True, result)
    return Outcome(False, {}, _why(claim, cands, constraint_of))


def _search(reqs: list[Request], cands: dict, constraint_of: dict, fixed: dict, counters: dict,
            chosen: dict) -> dict | None:
    if not reqs:
        return dict(chosen)
    r, rest = reqs[0], reqs[1:]
    taken = {d.key for ds in chosen.values() for d in ds}
    pool = [d for d in cands[r.name] if d.key not in taken or r.admin_access]
    for attr in constraint_of.get(r.name, []):
        pool = [d for d in pool
                if attr in d.attributes and (attr not in fixed or d.attributes[attr] == fixed[attr])]
    need = len(pool) if r.mode == "All" else r.count
    if len(pool) < need:
        return None
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
            found = _search(rest, cands, constraint_of, fix, left, {**chosen, r.name: combo})
            if found is not None:
                return found
    return None


def _why(claim: Claim, cands: dict, constraint_of: dict) -> str:
    for r in claim.requests:
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
