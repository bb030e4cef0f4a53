"""DRA objects (``resource.k8s.io`` v1, and v1beta1's flat request shape) as plain records.

- **ResourceSlice** → ``Device``s per node. Only slices of a pool's highest ``generation`` count
  (older ones are being replaced); a pool with fewer slices than ``resourceSliceCount`` is
  reported incomplete. Attribute and capacity names without a domain belong to the driver's
  domain (``type`` of driver ``gpu.nvidia.com`` is ``gpu.nvidia.com/type``). ``sharedCounters``
  (partitionable devices, e.g. MIG placements of one GPU) become ``CounterSet``s of the pool.
- **DeviceClass** → its CEL selectors. **ResourceClaim / ResourceClaimTemplate** → ``Claim``:
  requests (class, selectors, ``ExactCount``/``All``, count, adminAccess) and ``matchAttribute``
  constraints; a claim's ``status.allocation.devices.results`` name the devices it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpufleet.adapters.kubernetes.cel import SelectorError, milli, version_code
from gpufleet.adapters.kubernetes.quantity import QuantityError
from gpufleet.model.errors import InputError


@dataclass(frozen=True, slots=True)
class Device:
    driver: str
    pool: str
    name: str
    node: str
    attributes: dict[str, Any] = field(hash=False)     # qualified name -> value (versions encoded)
    capacity: dict[str, int] = field(hash=False)       # qualified name -> milli-units
    consumes: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()  # (counter set, ((counter, milli)...))

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)

    def by_domain(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]]:
        attrs: dict[str, dict[str, Any]] = {}
        caps: dict[str, dict[str, int]] = {}
        for q, v in self.attributes.items():
            dom, _, name = q.rpartition("/")
            attrs.setdefault(dom, {})[name] = v
        for q, v in self.capacity.items():
            dom, _, name = q.rpartition("/")
            caps.setdefault(dom, {})[name] = v
        return attrs, caps


@dataclass(frozen=True, slots=True)
class Request:
    name: str
    device_class: str
    selectors: tuple[str, ...]
    mode: str = "ExactCount"
    count: int = 1
    admin_access: bool = False
    #: ``firstAvailable`` subrequests, in the user's order of preference (named "request/sub");
    #: the fields above are the first one's, for readers that look at one request shape
    alternatives: tuple[Request, ...] = ()


@dataclass(frozen=True, slots=True)
class Claim:
    namespace: str
    name: str
    requests: tuple[Request, ...]
    match_attributes: tuple[tuple[tuple[str, ...], str], ...] = ()   # (requests or () for all, attribute)
    allocated: tuple[tuple[str, str, str], ...] = ()                 # (driver, pool, device)
    node: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _qualify(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def _attr_value(v: dict) -> Any:
    if "version" in v:
        return version_code(v["version"])
    for k in ("string", "int", "bool"):
        if k in v:
            return v[k]
    for k in ("strings", "ints", "bools", "versions"):
        if k in v:
            return tuple(version_code(x) for x in v[k]) if k == "versions" else tuple(v[k])
    return None


def _consumes(c: dict) -> tuple[str, tuple[tuple[str, int], ...]]:
    counts = (c.get("counters") or {}).items()
    return str(c["counterSet"]), tuple(sorted((n, milli(x.get("value", 0))) for n, x in counts))


def read_slices(slices: list[dict], source: str = "snapshot") -> tuple[list[Device], dict, list[str]]:
    """Devices of the newest generation of every pool, counter sets by (driver, pool, set), notes."""
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        k = (str(spec.get("driver", "")), str(pool.get("name", "")))
        newest[k] = max(newest.get(k, 0), int(pool.get("generation") or 0))
    devices: list[Device] = []
    counters: dict[tuple[str, str, str], dict[str, int]] = {}
    seen: dict[tuple[str, str], int] = {}
    expected: dict[tuple[str, str], int] = {}
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        driver, pname = str(spec.get("driver", "")), str(pool.get("name", ""))
        if int(pool.get("generation") or 0) != newest[(driver, pname)]:
            continue
        seen[(driver, pname)] = seen.get((driver, pname), 0) + 1
        expected[(driver, pname)] = int(pool.get("resourceSliceCount") or 1)
        node = str(spec.get("nodeName") or "")
        where = f"ResourceSlice {(s.get('metadata') or {}).get('name')}"
        try:
            for cs in spec.get("sharedCounters") or []:
                counters[(driver, pname, cs["name"])] = {c: milli(v.get("value", 0))
                                                        for c, v in (cs.get("counters") or {}).items()}
            for d in spec.get("devices") or []:
                d = {**d, **(d.get("basic") or {})}   # v1beta1 nests fields under "basic"
                devices.append(Device(
                    driver=driver, pool=pname, name=str(d["name"]), node=str(d.get("nodeName") or node),
                    attributes={_qualify(k, driver): _attr_value(v)
                                for k, v in (d.get("attributes") or {}).items()},
                    capacity={_qualify(k, driver): milli(v.get("value", 0) if isinstance(v, dict) else v)
                              for k, v in (d.get("capacity") or {}).items()},
                    consumes=tuple(_consumes(c) for c in d.get("consumesCounters") or [])))
        except (KeyError, TypeError, QuantityError, SelectorError) as e:
            raise InputError(source, where, f"malformed device or counter: {e}") from None
    notes = [f"pool {d}/{p}: {seen[(d, p)]} of {n} slices present (incomplete; the scheduler waits)"
             for (d, p), n in sorted(expected.items()) if seen.get((d, p), 0) < n]
    return devices, counters, notes


def read_classes(classes: list[dict]) -> dict[str, tuple[str, ...]]:
    out = {}
    for c in classes:
        sels = (c.get("spec") or {}).get("selectors") or []
        out[str((c.get("metadata") or {}).get("name"))] = tuple(
            str((s.get("cel") or {}).get("expression", "true")) for s in sels)
    return out


def _request(r: dict) -> Request:
    body = r.get("exactly") or r        # v1/v1beta2 nest under "exactly"; v1beta1 is flat
    if r.get("firstAvailable") and not r.get("exactly"):
        subs = tuple(_one(f"{r.get('name', '')}/{s.get('name', '')}", s) for s in r["firstAvailable"])
        return Request(subs[0].name.split("/")[0], subs[0].device_class, subs[0].selectors, subs[0].mode,
                       subs[0].count, subs[0].admin_access, alternatives=subs)
    return _one(str(r.get("name", "")), body)


def _one(name: str, body: dict) -> Request:
    return Request(name=name, device_class=str(body.get("deviceClassName", "")),
                   selectors=tuple(str((s.get("cel") or {}).get("expression", "true"))
                                   for s in body.get("selectors") or []),
                   mode=str(body.get("allocationMode") or "ExactCount"), count=int(body.get("count") or 1),
                   admin_access=bool(body.get("adminAccess")))


def read_claim(obj: dict) -> Claim:
    """A ResourceClaim, or a ResourceClaimTemplate's inner spec, as a ``Claim``."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    if obj.get("kind") == "ResourceClaimTemplate":
        spec = spec.get("spec") or {}
    devices = spec.get("devices") or {}
    alloc = ((obj.get("status") or {}).get("allocation") or {})
    results = (alloc.get("devices") or {}).get("results") or []
    node = ""
    for term in ((alloc.get("nodeSelector") or {}).get("nodeSelectorTerms") or []):
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("values"):
                node = str(f["values"][0])
    return Claim(
        namespace=str(meta.get("namespace") or "default"), name=str(meta.get("name", "")),
        requests=tuple(_request(r) for r in devices.get("requests") or []),
        match_attributes=tuple((tuple(c.get("requests") or ()), str(c["matchAttribute"]))
                               for c in devices.get("constraints") or [] if c.get("matchAttribute")),
        allocated=tuple((str(r.get("driver")), str(r.get("pool")), str(r.get("device"))) for r in results),
        node=node)
