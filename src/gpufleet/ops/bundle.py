"""A bundle: a folder of command outputs from one node. Read each file, say what it is.

Files are named after their command (``nvidia-smi-q.txt``, ``device-plugin.log`` …) by
``gpufleet node collect``; bundles gathered by hand are not, so an unknown name is recognised by
its content (the banner lines each tool prints). Content also beats a name that contradicts it when
the content is unmistakable (``STRONG``): ``nvidia-smi -q`` saved as ``nvidia-smi.txt`` is read as
``-q``, a kernel log saved as ``log1`` is a kernel log even if a line of it names ``nv-hostengine``.
A kernel log is recognised by the shape of its lines (``[ 1843.308145] …``, ``<4>[ 1126.6] …``,
``Feb 14 05:03:41 host kernel: …``, ``kern  :err   : …``): at least half of the first 200 non-blank
lines have it.

Binary and empty files are set aside with a reason instead of failing the diagnosis: a support
bundle often carries a stray core or tarball. A special file (FIFO, socket, device) or an unreadable
one is set aside too, and makes the bundle *incomplete*: something the collector meant to capture
is not there to read.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from gpufleet.model.errors import InputError
from gpufleet.ops.parse_smi import QUERY_HEADER

MAX_BYTES = 32 * 1024 * 1024  # a day of a noisy dmesg is a few MB; past this we read the tail
MAX_FILES = 500

# file name (without extension) → kind
NAME_KINDS: dict[str, str] = {
    "dmesg": "dmesg",
    "journal-kernel": "dmesg",
    "kern": "dmesg",
    "journalctl-k": "dmesg",
    "syslog": "dmesg",
    "nvidia-smi": "nvidia-smi",
    "nvidia-smi-a": "nvidia-smi-q",
    "nvidia-smi-q": "nvidia-smi-q",
    "nvidia-smi-l": "nvidia-smi-L",
    "nvidia-smi-nvlink-status": "nvidia-smi-nvlink-status",
    "nvidia-smi-nvlink-s": "nvidia-smi-nvlink-status",
    "nvidia-smi-mig": "nvidia-smi-mig",
    "nvidia-smi-topo-m": "nvidia-smi-topo-m",
    "nvidia-smi-query": "nvidia-smi-query",
    "lspci-vvv": "lspci-vvv",
    "lspci-nn": "lspci-nn",
    "lsmod-grep-nvidia": "lsmod",
    "lsmod": "lsmod",
    "modprobe": "modprobe",
    "uname-a": "uname",
    "fabricmanager": "fabricmanager",
    "systemctl-status-nvidia-fabricmanager": "systemctl-fabricmanager",
    "nvidia-container-cli-info": "nvidia-container-cli-info",
    "docker-run": "docker-run",
    "device-plugin": "device-plugin",
    "node": "node-json",
    "kubectl-describe-node": "kubectl-describe-node",
    "kubectl-describe-pod-events": "pod-events",
    "pod-events": "pod-events",
    "ibstat": "ibstat",
    "sys-class-infiniband": "sys-class-infiniband",
    "nv-hostengine": "nv-hostengine",
    "nccl-debug": "nccl-log",
    "nccl": "nccl-log",
    "dcgmi-diag": "dcgmi-diag",
    "all-reduce-perf": "nccl-tests",
}

# (kind, pattern) tried in order on the first 64 KB of an unknown file.
CONTENT_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nvidia-smi-q", re.compile(r"=+NVSMI LOG=+")),
    ("nvidia-smi", re.compile(r"NVIDIA-SMI \d.*Driver Version")),
    ("nvidia-smi-topo-m", re.compile(r"^\s*GPU0\s+.*CPU Affinity", re.M)),
    ("nvidia-smi-query", QUERY_HEADER),
    ("nvidia-smi-nvlink-status", re.compile(r"^GPU \d+: .*\n\s+Link \d+: ", re.M)),
    ("nvidia-smi-L", re.compile(r"^GPU \d+: .*\(UUID: GPU-", re.M)),
    ("ibstat", re.compile(r"^CA '[^']+'\s*$", re.M)),
    ("sys-class-infiniband", re.compile(r"/sys/class/infiniband/")),
    ("nccl-tests", re.compile(r"# Avg bus bandwidth")),
    ("nccl-log", re.compile(r"NCCL (INFO|WARN)")),
    ("node-json", re.compile(r'"kind"\s*:\s*"(Node|List)"|^kind: Node|^status:\n\s+addresses:', re.M)),
    ("kubectl-describe-node", re.compile(r"^Taints:|^Allocatable:", re.M)),
    ("pod-events", re.compile(r"UnexpectedAdmissionError|Allocate failed|^Events:", re.M)),
    ("lspci-vvv", re.compile(r"LnkSta:")),
    ("lspci-nn", re.compile(r"\[(10de|15b3):[0-9a-f]{4}\]")),
    ("nvidia-container-cli-info", re.compile(r"^NVRM version:", re.M)),
    ("docker-run", re.compile(r"OCI runtime|could not select device driver|nvidia-container-cli")),
    (
        "device-plugin",
        re.compile(r"device.plugin|Loading NVML|XidCriticalError|Registered device plugin", re.I),
    ),
    ("systemctl-fabricmanager", re.compile(r"nv-fabricmanager\[\d+\]|nvidia-fabricmanager\.service")),
    ("fabricmanager", re.compile(r"^\[\w{3} \d+ \d{4} [\d:]+\] \[(INFO|ERROR|WARNING)\]", re.M)),
    ("nv-hostengine", re.compile(r"nv-hostengine|DCGM", re.I)),
    ("dcgmi-diag", re.compile(r"Diagnostic\s+\|\s+Result", re.I)),
    ("lsmod", re.compile(r"^Module\s+Size\s+Used by|^nvidia\s+\d+\s+\d+", re.M)),
    ("dmesg", re.compile(r"NVRM:|kernel:|^\[\s*\d+\.\d+\]|mlx5_core", re.M)),
)


#: kinds whose content signature is unmistakable: they win over a file name that says otherwise
STRONG = frozenset({"nvidia-smi-q", "nvidia-smi", "dmesg", "ibstat"})
_KERNEL_LINE = re.compile(
    r"^(?:<\d+>)?\[\s*\d+\.\d+\]"  # dmesg, with or without the printk level
    r"|^\[\w{3} \w{3} [ \d]\d [\d:]{8} \d{4}\]"  # dmesg -T
    r"|^\w{3} [ \d]\d [\d:]{8} \S+ kernel: "  # journalctl -k / syslog
    r"|^kern\s*:\s*\w+\s*: "  # dmesg -x
    r"|^\s*NVRM: "
)


@dataclass
class Source:
    """One readable file of the bundle."""

    name: str  # path relative to the bundle, as printed in evidence
    kind: str
    lines: list[str]
    truncated: bool = False
    #: the kind its file name says, when the content said otherwise ("" when they agree)
    named: str = ""
    #: the lines joined and their start offsets, filled by ops.scan on first use (one join per file)
    index: tuple[str, list[int]] | None = field(default=None, repr=False, compare=False)


@dataclass
class Bundle:
    root: Path
    sources: list[Source] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "file: reason"
    #: why the bundle cannot be read whole (a special or unreadable file …), for ``ops.integrity``
    incomplete: list[str] = field(default_factory=list)

    def of(self, *kinds: str) -> list[Source]:
        return [s for s in self.sources if s.kind in kinds]

    @property
    def kinds(self) -> set[str]:
        return {s.kind for s in self.sources}


def name_kind(name: str) -> str:
    """The kind a file name says ("" for a name we do not know)."""
    stem = Path(name).name.lower()
    for ext in (".txt", ".log", ".json", ".out", ".yaml"):
        stem = stem.removesuffix(ext)
    return NAME_KINDS.get(stem, "")


def content_kind(head: str) -> str:
    """The kind the first 64 KB of a file show ("other" when nothing matches)."""
    for kind in ("nvidia-smi-q", "nvidia-smi"):
        if dict(CONTENT_KINDS)[kind].search(head):
            return kind
    lines = [ln for ln in head.splitlines()[:400] if ln.strip()][:200]
    if lines and 2 * sum(bool(_KERNEL_LINE.match(ln)) for ln in lines) >= len(lines):
        return "dmesg"
    for kind, pat in CONTENT_KINDS:
        if pat.search(head):
            return kind
    return "other"


def kinds_of(name: str, head: str) -> tuple[str, str]:
    """(kind, the kind its name says when the content overrode it, else "")."""
    by_name = name_kind(name)
    by_content = content_kind(head)
    if not by_name:
        return by_content, ""
    if by_content in STRONG and by_content != by_name:
        return by_content, by_name
    return by_name, ""


def _decode(raw: bytes) -> str | None:
    """Text, or None when the bytes are not text (NULs, or mostly undecodable)."""
    if b"\x00" in raw[:8192]:
        return None
    text = raw.decode("utf-8", errors="replace")
    sample = text[:8192]
    if sample and sample.count("\ufffd") > len(sample) // 20:
        return None
    return text


def load_bundle(root: Path) -> Bundle:
    """Read every file under ``root``; a missing or non-directory path is bad input (one line)."""
    if not root.exists():
        raise InputError(str(root), "", "no such bundle folder")
    if not root.is_dir() and not root.is_file():
        raise InputError(str(root), "", f"is a {_special(root)}, expected a bundle folder or a text file")
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if not p.is_dir())
    bundle = Bundle(root=root if root.is_dir() else root.parent)
    for path in paths[:MAX_FILES]:
        rel = str(path.relative_to(bundle.root))
        if path.name in ("MANIFEST.json", ".gpufleet-run.json"):  # `node collect`'s record of what
            continue  # ran and its claim on the folder (cli/outdir.py): not what a tool said
        if not path.is_file():  # never open a FIFO (it would block) or a device
            why = f"{rel}: not a regular file ({_special(path)}), not read"
            bundle.skipped.append(why)
            bundle.incomplete.append(why)
            continue
        try:
            size = path.stat().st_size
            with path.open("rb") as fh:
                if size > MAX_BYTES:
                    fh.seek(size - MAX_BYTES)
                raw = fh.read(MAX_BYTES)
        except OSError as e:
            why = f"{rel}: unreadable ({e.strerror})"
            bundle.skipped.append(why)
            bundle.incomplete.append(why)
            continue
        if not raw.strip():
            bundle.skipped.append(f"{rel}: empty")
            continue
        text = _decode(raw)
        if text is None:
            bundle.skipped.append(f"{rel}: binary, not a text log")
            continue
        lines = text.splitlines()
        if size > MAX_BYTES:
            lines = lines[1:]  # the first line of a tail read is cut
        kind, named = kinds_of(rel, text[:65536])
        bundle.sources.append(Source(rel, kind, lines, truncated=size > MAX_BYTES, named=named))
    if len(paths) > MAX_FILES:
        bundle.skipped.append(f"{len(paths) - MAX_FILES} more files: not read (limit {MAX_FILES})")
    return bundle


def _special(path: Path) -> str:
    """What a path that is neither a folder nor a regular file is, in words."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return "missing file"
    for test, word in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISLNK, "broken symbolic link")):
        if test(mode):
            return word
    return "special file"
