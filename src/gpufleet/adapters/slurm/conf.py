"""slurm.conf and gres.conf: the node and partition lines, read into Slurm-shaped records.

Only what a fleet needs is interpreted (NodeName, PartitionName, ClusterName, GresTypes, the
gres.conf device lines); every other ``Key=Value`` line is kept verbatim in ``settings`` so a
caller can look at it, but nothing here tries to be a full slurm.conf validator. Read as Slurm
reads it (slurm.conf(5), checked against ``scontrol show config`` on the emulated 22.05 cluster,
tests/integration/test_slurm_conf_parsing.py):

* keys are case-insensitive; node and partition names are not;
* a key given twice takes its **last** value (``setting``), so appended overrides and included
  site files win over the defaults above them;
* ``Include FILE`` (a line starting with the word, then whitespace) reads FILE in place; a
  relative FILE is found in slurm.conf's directory (also from a nested include, as Slurm's
  ``get_extra_conf_path`` does); glob patterns expand in sorted order;
* ``SchedulerParameters`` is one comma-separated string (its last value wins as a whole); the
  backfill plugin finds each option with a case-insensitive substring search, so inside that
  string the *first* ``bf_interval=`` counts (``scheduler_params``);
* ``NodeName=DEFAULT`` / ``PartitionName=DEFAULT`` lines set the defaults for the lines after them.
"""

from __future__ import annotations

import glob
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpufleet.adapters.slurm.hostlist import HostlistError, expand
from gpufleet.model.errors import InputError


@dataclass(frozen=True, slots=True)
class Gres:
    """One generic resource on a node: ``gpu:h100:8`` is name gpu, type h100, count 8."""

    name: str
    type: str | None
    count: int

    def __str__(self) -> str:
        return ":".join(p for p in (self.name, self.type, str(self.count)) if p)


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    cpus: int
    real_memory_mb: int
    gres: tuple[Gres, ...] = ()
    features: tuple[str, ...] = ()
    state: str | None = None
    weight: int | None = None

    def gpus(self) -> tuple[Gres, ...]:
        return tuple(g for g in self.gres if g.name == "gpu")


@dataclass(frozen=True, slots=True)
class SlurmPartition:
    name: str
    nodes: tuple[str, ...]
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class GresDevice:
    """A gres.conf line for one node: what it contributes when slurm.conf has no GPU type."""

    name: str
    type: str | None
    count: int


@dataclass(frozen=True, slots=True)
class SlurmConf:
    cluster_name: str
    nodes: tuple[SlurmNode, ...]
    partitions: tuple[SlurmPartition, ...] = ()
    settings: tuple[tuple[str, str], ...] = ()
    gres_devices: dict[str, tuple[GresDevice, ...]] = field(default_factory=dict)

    def setting(self, key: str) -> str | None:
        """The value of ``key`` (any case) as Slurm uses it: the last one given, or None."""
        for k, v in reversed(self.settings):
            if k.lower() == key.lower():
                return v
        return None

    def scheduler_params(self) -> dict[str, str]:
        """``SchedulerParameters`` options, lower-case name -> value ('' for a flag such as
        bf_continue); an option repeated inside the string keeps its first value, as Slurm's
        substring search does."""
        out: dict[str, str] = {}
        for item in (self.setting("SchedulerParameters") or "").split(","):
            key, _, value = item.strip().partition("=")
            if key and key.lower() not in out:
                out[key.lower()] = value.strip()
        return out


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) with comments stripped and backslash continuations joined."""
    out: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = no
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            out.append((start, line))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def pairs(line: str, source: str, lineno: int) -> list[tuple[str, str]]:
    """``Key=Value`` tokens of one line, in order; values may be quoted."""
    try:
        tokens = shlex.split(line, posix=True)
    except ValueError as e:
        raise InputError(source, f"line {lineno}", f"unbalanced quotes ({e})") from None
    out: list[tuple[str, str]] = []
    for tok in tokens:
        key, sep, value = tok.partition("=")
        if not sep:
            raise InputError(source, f"line {lineno}", f"expected Key=Value, got {tok!r}")
        out.append((key, value))
    return out


def _int(value: str, source: str, where: str, what: str) -> int:
    m = re.fullmatch(r"(\d+)([KMGT]?)", value.strip(), re.IGNORECASE)
    if not m:
        raise InputError(source, where, f"expected {what} as a whole number, got {value!r}")
    scale = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}[m.group(2).lower()]
    return int(m.group(1)) * scale


def parse_gres(text: str, source: str = "slurm.conf", where: str = "Gres") -> tuple[Gres, ...]:
    """``gpu:h100:8,gpu:a100:2(S:0),nic:1`` -> Gres records; ``(null)`` and empty give none."""
    text = text.strip()
    if not text or text.lower() in ("(null)", "none"):
        return ()
    out: list[Gres] = []
    for item in re.split(r",(?![^()]*\))", text):
        item = re.sub(r"\(.*\)$", "", item.strip())
        parts = item.split(":")
        if len(parts) == 1:
            out.append(Gres(parts[0], None, 1))
        elif len(parts) == 2:
            if parts[1].isdigit() or re.fullmatch(r"\d+[KMGT]", parts[1], re.IGNORECASE):
                out.append(Gres(parts[0], None, _int(parts[1], source, where, "a gres count")))
            else:
                out.append(Gres(parts[0], parts[1], 1))
        elif len(parts) == 3:
            out.append(Gres(parts[0], parts[1], _int(parts[2], source, where, "a gres count")))
        else:
            raise InputError(source, where, f"expected name[:type][:count], got {item!r}")
    return tuple(out)


def _expand(hostlist: str, source: str, where: str) -> list[str]:
    try:
        return expand(hostlist)
    except HostlistError as e:
        raise InputError(source, where, str(e)) from None


#: Largest node Weight: Slurm keeps it in 32 bits and reserves 2^32 - 1 (INFINITE).
MAX_WEIGHT = 2**32 - 2
_NODE_KEYS = {"nodename", "cpus", "procs", "realmemory", "gres", "feature", "features", "state", "weight"}


def _node_records(kv: list[tuple[str, str]], defaults: dict[str, str], source: str,
                  lineno: int) -> list[SlurmNode]:
    values = dict(defaults)
    values.update({k.lower(): v for k, v in kv})
    where = f"line {lineno}: NodeName={kv[0][1]}"
    cpus_text = values.get("cpus") or values.get("procs") or "1"
    cpus = _int(cpus_text, source, where + ": CPUs", "CPUs")
    memory = _int(values.get("realmemory", "1"), source, where + ": RealMemory", "RealMemory (MB)")
    gres = parse_gres(values.get("gres", ""), source, where + ": Gres")
    features_text = values.get("feature") or values.get("features") or ""
    features = tuple(f for f in re.split(r"[,&|]", features_text) if f)
    state = values.get("state")
    weight = _int(values["weight"], source, where + ": Weight", "Weight") if "weight" in values else None
    if weight is not None and weight > MAX_WEIGHT:
        raise InputError(source, where + ": Weight", f"expected a node weight of at most {MAX_WEIGHT} "
                         f"(a 32-bit number; 2^32 - 1 is Slurm's INFINITE), got {weight}")
    names = _expand(kv[0][1], source, where)
    return [SlurmNode(n, cpus, memory, gres, features, state, weight) for n in names]


MAX_INCLUDE_DEPTH = 16
_INCLUDE = re.compile(r"include\s+(\S.*)$", re.IGNORECASE)


def included_lines(text: str, source: str, base: Path | None,
                   depth: int = 0, chain: tuple[str, ...] = ()) -> list[tuple[str, int, str]]:
    """(file, line number, text) of ``text`` with every ``Include FILE`` line replaced by FILE's lines.

    ``chain`` holds the files being read (outermost first) so a loop is named as one
    (``a.conf → b.conf → a.conf``) instead of being cut at the depth bound."""
    out: list[tuple[str, int, str]] = []
    chain = chain or (str(Path(source).resolve()),)
    for lineno, line in logical_lines(text):
        m = _INCLUDE.match(line)
        if not m:
            out.append((source, lineno, line))
            continue
        if depth >= MAX_INCLUDE_DEPTH:
            raise InputError(source, f"line {lineno}: Include",
                             f"expected at most {MAX_INCLUDE_DEPTH} nested includes (a loop?)")
        target = Path(m.group(1).strip().strip('"'))
        if not target.is_absolute():
            if base is None:
                raise InputError(source, f"line {lineno}: Include",
                                 f"cannot resolve relative path {str(target)!r} without the file's directory")
            target = base / target
        paths = sorted(glob.glob(str(target))) if glob.has_magic(str(target)) \
            else [str(target)] if target.is_file() else []
        if not paths:
            raise InputError(source, f"line {lineno}: Include", f"no file matches {str(target)!r}")
        for path in paths:
            resolved = str(Path(path).resolve())
            if resolved in chain:
                loop = " → ".join(Path(p).name for p in (*chain[chain.index(resolved):], resolved))
                raise InputError(source, f"line {lineno}: Include", f"expected no include loop, got {loop}")
            out += included_lines(read_text(path), path, base, depth + 1, (*chain, resolved))
    return out


def parse_slurm_conf(text: str, source: str = "slurm.conf", base: Path | None = None) -> SlurmConf:
    """Node, partition and plain settings lines of a slurm.conf (includes read in place), in order."""
    nodes: dict[str, SlurmNode] = {}
    partitions: list[SlurmPartition] = []
    settings: list[tuple[str, str]] = []
    node_defaults: dict[str, str] = {}
    part_defaults: dict[str, str] = {}
    for src, lineno, line in included_lines(text, source, base):
        source = src
        kv = pairs(line, source, lineno)
        head = kv[0][0].lower()
        if head == "nodename":
            if kv[0][1].upper() == "DEFAULT":
                node_defaults.update({k.lower(): v for k, v in kv[1:] if k.lower() in _NODE_KEYS})
                continue
            for node in _node_records(kv, node_defaults, source, lineno):
                if node.name in nodes:
                    raise InputError(source, f"line {lineno}", f"node {node.name} is defined twice")
                nodes[node.name] = node
        elif head == "partitionname":
            if kv[0][1].upper() == "DEFAULT":
                part_defaults.update({k: v for k, v in kv[1:]})
                continue
            options = dict(part_defaults)
            options.update({k: v for k, v in kv[1:]})
            node_text = next((v for k, v in options.items() if k.lower() == "nodes"), "")
            options = {k: v for k, v in options.items() if k.lower() != "nodes"}
            part_nodes = (
                tuple(nodes) if node_text.upper() == "ALL"
                else tuple(_expand(node_text, source, f"line {lineno}: PartitionName={kv[0][1]}: Nodes"))
            )
            partitions.append(SlurmPartition(kv[0][1], part_nodes, tuple(options.items())))
        elif head in ("downnodes", "frontendname", "nodeset"):
            continue
        else:
            settings.extend(kv)
    conf = SlurmConf("cluster", tuple(nodes.values()), tuple(partitions), tuple(settings))
    return replace(conf, cluster_name=conf.setting("ClusterName") or "cluster")


def parse_gres_conf(text: str, source: str = "gres.conf") -> dict[str, tuple[GresDevice, ...]]:
    """Per node, the GPU-like devices gres.conf declares (``File=`` ranges or ``Count=``).

    Lines without ``NodeName=`` apply to every node (Slurm's meaning when gres.conf is shared);
    they are stored under the key ``"*"``.
    """
    out: dict[str, list[GresDevice]] = {}
    for lineno, line in logical_lines(text):
        kv = {k.lower(): v for k, v in pairs(line, source, lineno)}
        if "name" not in kv:
            continue
        where = f"line {lineno}"
        if "count" in kv:
            count = _int(kv["count"], source, where + ": Count", "Count")
        elif "file" in kv:
            count = len(_expand(kv["file"], source, where + ": File"))
        else:
            count = 1
        device = GresDevice(kv["name"], kv.get("type"), count)
        for node in _expand(kv["nodename"], source, where + ": NodeName") if "nodename" in kv else ["*"]:
            out.setdefault(node, []).append(device)
    return {k: tuple(v) for k, v in out.items()}


def read_text(path: str | Path) -> str:
    path = Path(path)
    try:
        return path.read_text()
    except OSError as e:
        raise InputError(str(path), "", f"cannot read file ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"byte {e.start}", "expected a UTF-8 text file, got binary data") \
            from None


def read_slurm_conf(path: str | Path, gres_path: str | Path | None = None) -> SlurmConf:
    conf = parse_slurm_conf(read_text(path), str(path), Path(path).parent)
    if gres_path is None:
        sibling = Path(path).with_name("gres.conf")
        gres_path = sibling if sibling.is_file() else None
    if gres_path is None:
        return conf
    devices = parse_gres_conf(read_text(gres_path), str(gres_path))
    return SlurmConf(conf.cluster_name, conf.nodes, conf.partitions, conf.settings, devices)
