"""Which job images may run on which driver: the compatibility matrix of a driver upgrade.

Rules (ops reference §8.1–8.2; CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver
Versions"; NVIDIA's CUDA compatibility guide):

- **native**: the driver is at least the toolkit's minimum (table below). Newer drivers always run
  older CUDA (backward compatibility).
- **minor-compat**: an older driver of the same CUDA major family still runs the app (13.x on ≥ 580,
  12.x on ≥ 525, 11.x on ≥ 450.80.02) with a reduced feature set — PTX JIT of newer PTX fails.
- **forward-compat**: across majors only with the ``cuda-compat-<major>-<minor>`` package, on
  data-center GPUs (elsewhere CUDA error 804).
- **no** otherwise; and always when Fabric Manager's version differs from the driver's (FM refuses
  to start; CUDA init fails with 802 on NVSwitch systems) — driver and FM upgrade as one unit.

During a rollout an image that is ``no`` on the old driver may land only on upgraded nodes; one
that is ``no`` on the new driver only on old ones.
"""

from __future__ import annotations

#: Linux x86_64 minimum driver per CUDA toolkit GA (ops reference §8.1).
MIN_DRIVER: dict[str, str] = {
    "13.1": "590.44.01", "13.0": "580.65.06", "12.9": "575.51.03", "12.8": "570.26", "12.6": "560.28.03",
    "12.5": "555.42.02", "12.4": "550.54.14", "12.3": "545.23.06", "12.2": "535.54.03", "12.1": "530.30.02",
    "12.0": "525.60.13", "11.8": "520.61.05", "11.7": "515.43.04", "11.6": "510.39.01", "11.5": "495.29.05",
    "11.4": "470.42.01", "11.0": "450.51.05",
}
#: Minor-version compatibility floor per CUDA major family.
FAMILY_FLOOR: dict[int, str] = {13: "580", 12: "525", 11: "450.80.02"}


def version(v: str, what: str = "driver", example: str = "570.86.15") -> tuple[int, ...]:
    """'570.86.15' → (570, 86, 15); anything else is a ValueError naming ``what``."""
    parts = v.strip().split(".")
    if not v.strip() or not all(p.isdigit() and len(p) <= 6 for p in parts):
        raise ValueError(f"{what}: expected a version like {example}, got {v!r}")
    return tuple(int(p) for p in parts)


def _ge(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)) >= b + (0,) * (n - len(b))


def compat(cuda: str, driver: str, fabric_manager: str | None = None,
           forward_compat: bool = False) -> tuple[str, str]:
    """(verdict, why) for an image built with CUDA ``cuda`` on a node with ``driver``."""
    c, d = version(cuda, "CUDA", "12.8"), version(driver, "driver")
    if len(c) < 2:
        raise ValueError(f"CUDA: expected major.minor like 12.8, got {cuda!r}")
    key = f"{c[0]}.{c[1]}"
    if key not in MIN_DRIVER:
        raise ValueError(f"CUDA: {key} is not in the toolkit table (known: {', '.join(MIN_DRIVER)})")
    if fabric_manager is not None and version(fabric_manager, "Fabric Manager") != d:
        return "no", (f"Fabric Manager {fabric_manager} ≠ driver {driver}: FM refuses to start, CUDA init "
                      "fails with 802 on NVSwitch systems")
    need = MIN_DRIVER[key]
    if _ge(d, version(need)):
        return "native", f"driver {driver} ≥ {need} (CUDA {key} GA)"
    floor = FAMILY_FLOOR.get(c[0])
    if floor is not None and _ge(d, version(floor)):
        return "minor-compat", (f"driver {driver} ≥ {floor} (CUDA {c[0]}.x family): runs with reduced "
                                f"features (no PTX JIT of newer PTX); {need} for full support")
    if forward_compat:
        return "forward-compat", f"cuda-compat-{c[0]}-{c[1]} on a data-center GPU (else CUDA error 804)"
    return "no", f"driver {driver} < {need} (CUDA {key} GA) and below the {c[0]}.x family floor"


def placement(cuda: str, old: str, new: str, forward_compat: bool = False) -> dict[str, str]:
    """Where an image may run while a rollout from ``old`` to ``new`` is under way."""
    before, why_old = compat(cuda, old, forward_compat=forward_compat)
    after, why_new = compat(cuda, new, forward_compat=forward_compat)
    where = {(True, True): "any node", (False, True): "upgraded nodes only",
             (True, False): "old nodes only", (False, False): "nowhere"}[(before != "no", after != "no")]
    return {"cuda": cuda, "old_driver": before, "new_driver": after, "may_run_on": where,
            "why_old": why_old, "why_new": why_new}
