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

Two more rows (``nccl`` and ``kernel_ok``):

- **NCCL ↔ CUDA.** NCCL binaries are built per CUDA toolkit; the banner says which
  (``NCCL version 2.30.7+cuda12.9``, ops reference §8.2) and NVIDIA publishes several builds per
  release: "This NCCL release supports CUDA 10.2, CUDA 11.0, and CUDA 11.4" (NCCL 2.10.3 release
  notes, docs.nvidia.com/deeplearning/nccl/release-notes/rel_2-10-3.html); 12.2, 12.4 and 12.9 for
  2.27.3 (its release notes, rel_2-27-3.html, as quoted by a third party: (uncertain)); 12.9 and
  13.3 for 2.30.7 (NVIDIA's redist index developer.nvidia.com/compute/redist/nccl/v2.30.7/). The
  build's CUDA runtime must be of the image's CUDA major (conda's nccl 2.28.9 builds pin
  ``cuda-version >=12,<13`` or ``>=13,<14``; pip ships ``nvidia-nccl-cu12`` and ``-cu13``), and
  the node's driver must run the build's CUDA exactly as it must run the image's (``compat``).
  An image ``nccl: 2.27.3`` without ``+cudaX.Y`` takes the release's newest build of the image's
  major (as the pip wheels are built; (uncertain)), or the image's CUDA for a release not on file.
- **kernel ↔ driver module.** "The NVIDIA open kernel modules support the same range of Linux
  kernel versions that are supported with the proprietary NVIDIA kernel modules. This is
  currently Linux kernel 3.10 or newer" (NVIDIA/open-gpu-kernel-modules README.md at 550.40.82)
  and "… 4.15 or newer" (the same README at 560.31.02). A driver whose module cannot be built for
  the node's kernel does not load: the node runs no GPU work at all (a node property, not an
  image's: fleet_events/upgrade.py fails its validation). Where between 550.40.82 and 560.31.02 the floor
  moved is not on file (the 555 branch is taken at 3.10: (uncertain)); drivers before the open
  modules (< 515) are taken at 3.10 too (uncertain). Newest kernels are not bounded here: a
  driver branch builds on kernels released before it (Debian: 550.144.03 "tested up to Linux
  6.14"), not modelled.
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


#: NCCL release (major.minor) → the CUDA toolkits NVIDIA built it for (sources in the docstring).
NCCL_BUILDS: dict[str, tuple[str, ...]] = {
    "2.10": ("10.2", "11.0", "11.4"), "2.27": ("12.2", "12.4", "12.9"), "2.30": ("12.9", "13.3"),
}
#: Lowest Linux kernel the driver's kernel module supports, by driver branch (first match wins).
KERNEL_FLOOR: tuple[tuple[int, str], ...] = ((560, "4.15"), (0, "3.10"))


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
           forward_compat: bool = False, unknown_minor: bool = False) -> tuple[str, str]:
    """(verdict, why) for an image built with CUDA ``cuda`` on a node with ``driver``.
    ``unknown_minor``: a minor not in the toolkit table (an NCCL build for CUDA 13.3) is judged by
    its family floor alone — never "native", since its own minimum is not on file."""
    c, d = version(cuda, "CUDA", "12.8"), version(driver, "driver")
    if len(c) < 2:
        raise ValueError(f"CUDA: expected major.minor like 12.8, got {cuda!r}")
    key = f"{c[0]}.{c[1]}"
    if key not in MIN_DRIVER and not (unknown_minor and c[0] in FAMILY_FLOOR):
        raise ValueError(f"CUDA: {key} is not in the toolkit table (known: {', '.join(MIN_DRIVER)})")
    if fabric_manager is not None and version(fabric_manager, "Fabric Manager") != d:
        return "no", (f"Fabric Manager {fabric_manager} ≠ driver {driver}: FM refuses to start, CUDA init "
                      "fails with 802 on NVSwitch systems")
    need = MIN_DRIVER.get(key, "a minimum not on file")
    if key in MIN_DRIVER and _ge(d, version(need)):
        return "native", f"driver {driver} ≥ {need} (CUDA {key} GA)"
    floor = FAMILY_FLOOR.get(c[0])
    if floor is not None and _ge(d, version(floor)):
        return "minor-compat", (f"driver {driver} ≥ {floor} (CUDA {c[0]}.x family): runs with reduced "
                                f"features (no PTX JIT of newer PTX); {need} for full support")
    if forward_compat:
        return "forward-compat", f"cuda-compat-{c[0]}-{c[1]} on a data-center GPU (else CUDA error 804)"
    return "no", f"driver {driver} < {need} (CUDA {key} GA) and below the {c[0]}.x family floor"


def placement(cuda: str, old: str, new: str, forward_compat: bool = False,
              nccl: str | None = None) -> dict[str, str | None]:
    """Where an image (its CUDA, optionally its NCCL) may run while a rollout from ``old`` to
    ``new`` is under way."""
    before, why_old = image_compat(cuda, nccl, old, forward_compat=forward_compat)
    after, why_new = image_compat(cuda, nccl, new, forward_compat=forward_compat)
    where = {(True, True): "any node", (False, True): "upgraded nodes only",
             (True, False): "old nodes only", (False, False): "nowhere"}[(before != "no", after != "no")]
    return {"cuda": cuda, "nccl": nccl, "old_driver": before, "new_driver": after, "may_run_on": where,
            "why_old": why_old, "why_new": why_new}


def nccl_build(nccl: str, cuda: str | None) -> str:
    """The CUDA toolkit an image's NCCL (``2.27.3+cuda12.9`` or ``2.27.3``) was built for; a
    ValueError names what is wrong (a build NVIDIA did not publish, another CUDA major)."""
    ver, _, build = nccl.strip().partition("+")
    v = version(ver, "nccl", "2.27.3+cuda12.9")
    if len(v) < 2:
        raise ValueError(f"nccl: expected a version like 2.27.3+cuda12.9, got {nccl!r}")
    rel = f"{v[0]}.{v[1]}"
    known = NCCL_BUILDS.get(rel)
    if build:
        if not build.startswith("cuda"):
            raise ValueError(f"nccl: expected a build like +cuda12.9 after the version, got {nccl!r}")
        b = version(build[4:], "nccl build", "12.9")
        if len(b) < 2:
            raise ValueError(f"nccl: expected a build like +cuda12.9, got {nccl!r}")
        out = f"{b[0]}.{b[1]}"
        if known is not None and out not in known:
            raise ValueError(f"nccl: NCCL {rel} was built for CUDA {', '.join(known)}, not {out}")
    elif cuda is None:
        raise ValueError(f"nccl: {nccl!r} names no build: give +cudaX.Y or the image's cuda")
    else:
        major = cuda.split(".")[0]
        same = [b for b in (known or ()) if b.split(".")[0] == major]
        out = same[-1] if same else cuda.strip()
    if cuda is not None and out.split(".")[0] != cuda.strip().split(".")[0]:
        raise ValueError(f"nccl: {nccl} is built for CUDA {out}, the image for CUDA {cuda}: NCCL and "
                         "the application's CUDA runtime must be of one major")
    if out.split(".")[0].isdigit() and int(out.split(".")[0]) not in FAMILY_FLOOR and out not in MIN_DRIVER:
        raise ValueError(f"nccl: CUDA {out} is older than the compatibility table (11.0)")
    return out


def image_compat(cuda: str | None, nccl: str | None, driver: str,
                 forward_compat: bool = False) -> tuple[str, str]:
    """(verdict, why) for an image (its CUDA, its NCCL) on ``driver``: the weaker of the image's
    verdict and its NCCL build's. Within one CUDA major both meet the same family floor, so the
    build changes *whether* it runs only for an image that names no CUDA of its own; it weakens
    "native" to "minor-compat" where the build is newer than the driver (e.g. NCCL +cuda12.9 on
    550.54.14)."""
    verdict, why = ("native", "no CUDA named") if cuda is None else compat(cuda, driver,
                                                                           forward_compat=forward_compat)
    if nccl is not None and verdict != "no":
        build = nccl_build(nccl, cuda)
        v, w = compat(build, driver, forward_compat=forward_compat, unknown_minor=True)
        if STRENGTH[v] < STRENGTH[verdict]:
            return v, f"NCCL {nccl} (built for CUDA {build}): {w}"
    return verdict, why


#: Verdicts from weakest to strongest.
STRENGTH = {"no": 0, "forward-compat": 1, "minor-compat": 2, "native": 3}


def kernel_floor(driver: str) -> str:
    """The lowest Linux kernel ``driver``'s module supports (KERNEL_FLOOR)."""
    branch = version(driver)[0]
    return next(k for b, k in KERNEL_FLOOR if branch >= b)


def kernel_ok(driver: str, kernel: str) -> tuple[bool, str]:
    """Whether ``driver``'s kernel module builds and loads on Linux ``kernel`` ("5.15.0-91")."""
    k = version(kernel.split("-")[0], "kernel", "5.15.0")
    floor = kernel_floor(driver)
    if _ge(k, version(floor)):
        return True, f"kernel {kernel} ≥ {floor} (driver {driver})"
    return False, (f"kernel {kernel} < {floor}, the oldest driver {driver}'s module supports: the module "
                   "does not build or load")
