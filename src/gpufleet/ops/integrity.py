"""Is the bundle whole, and from one node at one time? A verdict is only as good as its files.

A diagnosis that reads a cut file or files from two machines can be confidently wrong: "no fault"
because the GPU that failed was in the part that was cut off, "driver healthy" from another node's
``nvidia-smi``. So before trusting the verdict we check what the files say about themselves:

- **cut ``nvidia-smi -q``**: the header says ``Attached GPUs : 8`` and the file holds fewer
  ``GPU 0000…`` blocks (an excerpt without that header promises nothing, and is not flagged);
- **cut ``nvidia-smi`` table**: every table nvidia-smi prints ends in its ``+---…---+`` border; a
  table whose last non-blank line is not one was cut (a pipe closed early, a paste cut short);
- **two driver versions**: the versions the files report (the table's and ``-q``'s ``Driver
  Version``, the kernel log's last module load banner — proprietary ``NVRM: loading NVIDIA UNIX
  x86_64 Kernel Module  550.144.03`` or open ``NVRM: loading NVIDIA UNIX Open Kernel Module for
  x86_64  570.158.01`` —, ``nvidia-container-cli info``'s ``NVRM version``) differ. That is two
  machines or two moments in one folder. The one case where it is the fault itself — the kernel
  module and the libraries disagree after an upgrade — is its own finding (``api-mismatch``,
  ``nvml-mismatch``), and then two versions are expected, not a mixed bundle;
- **special or unreadable files** (``bundle.load_bundle``).

Each reason is one line naming the file and line; ``diagnose`` reports them as "incomplete bundle: …"
and marks the verdict as not confident.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from gpufleet.ops.bundle import Bundle, Source
from gpufleet.ops.scan import indexed

MISMATCH_RULES = frozenset({"api-mismatch", "nvml-mismatch"})
_ATTACHED = re.compile(r"^Attached GPUs\s*:\s*(\d+)\s*$")
_Q_BLOCK = re.compile(r"^GPU [0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d\s*$")
_TABLE_DRIVER = re.compile(r"NVIDIA-SMI \S+\s+Driver Version: (\S+)")
#: per kind, where a file states the running driver's version (searched over the joined text)
VERSION_AT: dict[str, re.Pattern[str]] = {
    "nvidia-smi": _TABLE_DRIVER,
    "nvidia-smi-q": re.compile(r"^Driver Version\s*:\s*(\S+)[ \t]*$", re.M),
    "dmesg": re.compile(
        r"NVRM: loading NVIDIA UNIX (?:Open Kernel Module for \S+|\S+ Kernel Module)\s+(\d+(?:\.\d+)+)"
    ),
    "nvidia-container-cli-info": re.compile(r"^NVRM version:[ \t]*(\S+)", re.M),
}


def driver_versions(src: Source) -> list[tuple[str, int]]:
    """(version, line) as this file reports the running driver; a kernel log reports its last load."""
    pat = VERSION_AT.get(src.kind)
    if pat is None:
        return []
    text, starts = indexed(src)
    # a kernel log: its load banners are a handful, keep the last; any other file: the first
    m = next(reversed(list(pat.finditer(text))), None) if src.kind == "dmesg" else pat.search(text)
    return [(m.group(1), bisect_right(starts, m.start()))] if m else []


def _cut_smi_q(src: Source) -> str:
    attached = next(((int(m.group(1)), i) for i, ln in enumerate(src.lines, 1)
                     if (m := _ATTACHED.match(ln))), None)
    if attached is None:
        return ""
    blocks = sum(bool(_Q_BLOCK.match(ln)) for ln in src.lines)
    n, line = attached
    if blocks < n:
        return (f"{src.name}: {blocks} of {n} GPU blocks ('Attached GPUs : {n}' at line {line}): "
                "the output is cut, the other GPUs were not read")
    return ""


def _cut_table(src: Source) -> str:
    if not any(_TABLE_DRIVER.search(ln) for ln in src.lines):
        return ""
    body = [ln for ln in src.lines if ln.strip()]
    last = body[-1].strip()
    if last.startswith("+") and last.endswith("+") and set(last) <= set("+-="):
        return ""
    return f"{src.name}: the nvidia-smi table ends at line {len(src.lines)} without its closing border: cut"


def mixed_versions(bundle: Bundle) -> dict[str, tuple[str, int]]:
    """Driver version → (file, line) where first reported, when the files report more than one."""
    versions: dict[str, tuple[str, int]] = {}
    for src in bundle.sources:
        for version, line in driver_versions(src):
            versions.setdefault(version, (src.name, line))
    return versions if len(versions) > 1 else {}


def check(
    bundle: Bundle, rules_found: set[str], versions: dict[str, tuple[str, int]] | None = None
) -> list[str]:
    """Every reason the bundle is not one whole capture of one node (module doc), in file order
    (``versions``: ``mixed_versions(bundle)`` when the caller has it already)."""
    out = list(bundle.incomplete)
    for src in bundle.sources:
        if src.kind == "nvidia-smi-q" and (why := _cut_smi_q(src)):
            out.append(why)
        if src.kind == "nvidia-smi" and (why := _cut_table(src)):
            out.append(why)
    versions = mixed_versions(bundle) if versions is None else versions
    if versions and not rules_found & MISMATCH_RULES:
        seen = ", ".join(f"{v} ({f}:{ln})" for v, (f, ln) in versions.items())
        out.append(f"{len(versions)} driver versions, {seen}: a mixed bundle, files from different nodes "
                   "or different times")
    return out
