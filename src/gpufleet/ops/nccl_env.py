"""NCCL's environment from the node's topology, and the half-bandwidth failures that defeat it.

From ``nvidia-smi topo -m``: each GPU's nearest NIC (PIX < PXB < PHB < NODE < SYS: one PCIe switch,
several switches, the host bridge, the NUMA node, across the CPU interconnect). The NICs that are
some GPU's nearest make ``NCCL_IB_HCA``; a NIC no GPU is near (a front-end/management port) is left out.
GPUDirect RDMA is used when the GPU–NIC distance is within ``NCCL_NET_GDR_LEVEL`` (default PXB,
ops-reference §7.1): a GPU whose nearest NIC is PHB/NODE/SYS bounces through host memory, and one
across the CPU interconnect (SYS) typically gets half the bandwidth or less (NVIDIA/nccl#412:
"If the NIC is attached to the CPU getting 16 GB/s is normal", against 24 GB/s on the switch).

From ``NCCL_DEBUG=INFO`` logs: ``NET/Socket`` / ``Using network Socket`` means no IB port was usable;
``GPU Direct RDMA Disabled`` means no peermem/DMA-BUF; a ``NET/IB : Using`` list shorter than the
expected HCAs means ports are down (NCCL silently skips non-ACTIVE ports).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from gpufleet.ops.parse_smi import Topo
from gpufleet.ops.parse_sys import IbPort

DISTANCE = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}
GDR_OK = ("PIX", "PXB")  # within NCCL_NET_GDR_LEVEL's default


@dataclass
class GpuNic:
    gpu: str
    nic: str
    link: str


@dataclass
class NcclEnv:
    pairs: list[GpuNic]
    env: dict[str, str]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _name(topo: Topo, col: str) -> str:
    return topo.legend.get(col, col)


#: An RDMA device name NCCL matches in NCCL_IB_HCA (mlx5_0, bnxt_re0, irdma0, ...), as opposed to
#: nvidia-smi's positional aliases NIC0, NIC1, ... which no NCCL filter knows.
_ALIAS = re.compile(r"NIC\d+")


def derive(topo: Topo, legend: dict[str, str] | None = None) -> NcclEnv:
    """The environment for this topology. ``legend`` (NICn → device name, e.g. from
    ``--nic-legend``) adds to the topology's own 'NIC Legend' lines. NCCL_IB_HCA lists device names:
    ``=NIC1,NIC2`` would match no HCA (NCCL compares the filter with ibv device names,
    ops-reference §7.1), so without a legend it is not set and the gap is said instead."""
    if legend:
        topo = Topo(topo.columns, topo.matrix, {**topo.legend, **legend})
    pairs: list[GpuNic] = []
    problems: list[str] = []
    notes: list[str] = []
    for gpu in topo.gpus:
        row = topo.matrix.get(gpu, {})
        nics = [(DISTANCE[v], c) for c, v in row.items() if c in topo.nics and v in DISTANCE]
        if not nics:
            continue
        best = min(nics)[0]
        nic = next(c for d, c in sorted(nics) if d == best)
        pairs.append(GpuNic(gpu, _name(topo, nic), row[nic]))
    if not pairs:
        return NcclEnv(
            [], {}, ["no GPU–NIC relation in this topology: no RDMA NIC, or not a `topo -m` output"]
        )
    hcas = sorted(
        {p.nic for p in pairs}, key=lambda s: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]
    )
    unused = [_name(topo, c) for c in topo.nics if _name(topo, c) not in hcas]
    aliases = [h for h in hcas if _ALIAS.fullmatch(h)]
    env = {} if aliases else {"NCCL_IB_HCA": "=" + ",".join(hcas)}
    if aliases:
        problems.append(
            f"NCCL_IB_HCA not set: {', '.join(aliases)} are nvidia-smi's aliases, not device names, and "
            "NCCL would match no HCA with them; give the full `nvidia-smi topo -m` output (its 'NIC "
            "Legend' lines, NICn: mlx5_x) or --nic-legend FILE"
        )
    far = [p for p in pairs if p.link not in GDR_OK]
    if far:
        for p in far:
            problems.append(
                f"{p.gpu}: nearest NIC {p.nic} is {p.link} (across the "
                f"{'CPU interconnect' if p.link == 'SYS' else 'host bridge'}): no GPUDirect RDMA at the "
                "default level, expect about half the bandwidth of a PIX pair"
            )
    else:
        notes.append(
            "every GPU has a NIC on its PCIe switch (PIX/PXB): GPUDirect RDMA at the default "
            "NCCL_NET_GDR_LEVEL=PXB; needs nvidia_peermem or DMA-BUF"
        )
    shared: dict[str, list[str]] = {}
    for p in pairs:
        shared.setdefault(p.nic, []).append(p.gpu)
    for nic, gpus in shared.items():
        if len(gpus) > 1:
            notes.append(f"{nic} serves {', '.join(gpus)}: they share its bandwidth")
    if unused:
        notes.append(f"left out of NCCL_IB_HCA (no GPU near them): {', '.join(unused)}")
    return NcclEnv(pairs, env, problems, notes)


def check_ports(ports: list[IbPort], source: str) -> list[str]:
    out = []
    tops: dict[str, float] = {}
    for p in ports:
        if p.active and p.rate_gbps:
            tops[p.link_layer] = max(tops.get(p.link_layer, 0.0), p.rate_gbps)
    for p in ports:
        if not p.active:
            out.append(f"{source}: {p.device} port {p.port} is {p.state} / {p.phys_state}: NCCL skips it")
        elif p.rate_gbps and p.rate_gbps < tops.get(p.link_layer, 0):
            out.append(
                f"{source}: {p.device} port {p.port} at {p.rate_gbps:g} Gb/s of its peers' "
                f"{tops[p.link_layer]:g}: a half-rate link halves that rail"
            )
    return out


_USING_IB = re.compile(r"NET/IB : Using (.*?)(?:;|$)")
_NCCL_HOST = re.compile(r"^(\S+?):\d+:\d+ \[\d+\] ")
_SOCKET_IFS = re.compile(r"NET/Socket : Using (.*)$")


def single_node_loopback(lines: list[str]) -> int:
    """The 1-based line of the ``NET/Socket : Using`` line when the log is a one-host run whose socket
    transport has only the loopback interface (``[0]lo:127.0.0.1``), else 0.

    Why this is not a fabric fault: between GPUs of one node NCCL uses NVLink, PCIe P2P or shared
    memory; the network transport is only picked for ranks on other hosts. A single-node run on a
    machine with no IB (a workstation, a container with host networking off) prints ``NET/IB : No
    device found`` and settles on ``lo`` — normal, and nothing a cable reseat would change. The host
    is the ``host:pid:tid [rank]`` prefix NCCL puts on every INFO line."""
    hosts = {m.group(1) for ln in lines if (m := _NCCL_HOST.match(ln))}
    if len(hosts) != 1:
        return 0
    first, ifaces = 0, set()
    for i, ln in enumerate(lines, 1):
        if m := _SOCKET_IFS.search(ln):
            ifaces |= set(re.findall(r"\[\d+\]([\w.-]+?):", m.group(1)))
            first = first or i
    return first if ifaces and ifaces <= {"lo"} else 0


def check_nccl_log(lines: list[str], expected_hcas: list[str], source: str) -> list[str]:
    out: list[str] = []
    text = "\n".join(lines)
    if lo := single_node_loopback(lines):
        out.append(
            f"{source}:{lo}: one host over loopback only: NCCL's socket transport is unused between "
            "GPUs of one node (not a fabric fault)"
        )
    for i, ln in enumerate(lines, 1):
        if lo:
            break
        if "NET/IB : No device found" in ln or "Using network Socket" in ln:
            out.append(f"{source}:{i}: NCCL fell back to sockets ({ln.strip()[-60:]})")
            break
    if "GPU Direct RDMA Disabled" in text:
        out.append(f"{source}: GPU Direct RDMA disabled: load nvidia_peermem (or use DMA-BUF)")
    via_net = [ln for ln in lines if re.search(r"via NET/IB/\d+", ln)]
    if via_net and not any("GDRDMA" in ln for ln in via_net):
        out.append(f"{source}: channels go via NET/IB without /GDRDMA: traffic bounces through host memory")
    used: set[str] = set()
    for m in _USING_IB.finditer(text):
        used |= set(re.findall(r"\[\d+\]([\w]+):\d+", m.group(1)))
    if used and expected_hcas:
        missing = sorted(set(expected_hcas) - used)
        if missing:
            out.append(
                f"{source}: NCCL used {len(used)} HCA(s), not {', '.join(missing)}: a port down or "
                "filtered by NCCL_IB_HCA"
            )
    return out
