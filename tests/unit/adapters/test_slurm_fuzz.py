"""Every Slurm reader, fed arbitrary text built from the tokens its format uses: a result or one
InputError line, never another exception."""

import string
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.adapters.slurm.conf import parse_gres_conf, parse_slurm_conf
from gpufleet.adapters.slurm.fleet_conf import fleet_from_conf
from gpufleet.adapters.slurm.settings import BackfillSettings, priority_from_conf
from gpufleet.adapters.slurm.tenancy_import import tenancy_from_slurm
from gpufleet.adapters.slurm.topology_conf import parse_topology
from gpufleet.model.errors import InputError
from gpufleet.testing.builders import fleet
from gpufleet.traces.slurm_sacct import parse_sacct

DATA = Path(__file__).parents[2] / "data" / "slurm"
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOKENS = ["NodeName=", "PartitionName=", "Nodes=", "Gres=", "gpu:h100:8", "gpu:", "CPUs=", "RealMemory=",
          "DEFAULT", "ALL", "n[1-4]", "n[", "[", "]", "-", ",", "=", "#", " ", "\n", "\\\n", '"', "Include ",
          "SchedulerParameters=", "bf_interval=", "PriorityWeightAge=", "PriorityMaxAge=", "7-0", "00:10:00",
          "1e9", "nan", "-1", "99999999999999999999", "\x00", "é", "State=DOWN", "Weight=", "SwitchName=",
          "Switches=", "BlockName=", "BlockSizes=", "Name=gpu", "File=/dev/nvidia[0-3]", "Count=", "Type="]


def text_of(tokens: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.sampled_from(tokens), st.text(string.printable, max_size=4)),
                    max_size=30).map("".join)


@FUZZ
@given(text_of(TOKENS), text_of(TOKENS), text_of(TOKENS))
def test_conf_gres_and_topology_readers_end_in_a_fleet_or_one_input_error(conf: str, gres: str,
                                                                           topo: str) -> None:
    try:
        parsed = parse_slurm_conf(conf)
        BackfillSettings.from_conf(parsed)
        parsed = parsed.__class__(parsed.cluster_name, parsed.nodes, parsed.partitions, parsed.settings,
                                  parse_gres_conf(gres))
        got = fleet_from_conf(parsed, parse_topology(topo), default_gpu="H100-80GB")
        priority_from_conf(parsed, got.fleet)
    except InputError as e:
        assert "\n" not in str(e)


SACCT_HEADER = (DATA / "sacct.txt").read_text().splitlines()[0]
SACCT_TOKENS = ["|", "\n", "1", "1.batch", "2_3", "COMPLETED", "NODE_FAIL", "PENDING", "CANCELLED by 0",
                "2026-11-30T13:03:14", "Unknown", "00:00:02", "cpu=8,gres/gpu=1,mem=62.50G,node=1",
                "gres/gpu=-1", "mem=nanG", "None assigned", "gpu[001-002]", "", "research", "UNLIMITED"]


@FUZZ
@given(text_of(SACCT_TOKENS))
def test_the_sacct_reader_ends_in_a_trace_or_one_input_error(body: str) -> None:
    try:
        trace = parse_sacct(SACCT_HEADER + "\n" + body)
        assert all(ps.request.gpus >= 0 for j in trace.jobs for ps in j.pod_sets)
        assert all(r.end is None or r.start is None or r.end >= r.start for r in trace.records)
    except InputError as e:
        assert "\n" not in str(e)


ASSOC_HEADER = "Cluster|Account|ParentName|User|Share|GrpTRES|QOS"
QOS_HEADER = "Name|Priority|Preempt|PreemptMode|GrpTRES|MaxTRESPU"
ASSOC_TOKENS = ["|", "\n", "emu", "root", "lab", "vision", "", "1", "parent", "0", "-3",
                "gres/gpu=16", "gres/gpu=x", "cpu=4", "normal", "high,low"]


@FUZZ
@given(text_of(ASSOC_TOKENS), text_of(ASSOC_TOKENS))
def test_the_tenancy_import_ends_in_a_tenancy_or_one_input_error(assoc: str, qos: str) -> None:
    conf = parse_slurm_conf("ClusterName=emu\nNodeName=n[1-2] CPUs=8 RealMemory=1024 Gres=gpu:h100:8\n")
    try:
        tenancy_from_slurm(ASSOC_HEADER + "\n" + assoc, QOS_HEADER + "\n" + qos, conf,
                           fleet().leaves(1, nodes=2).build())
    except InputError as e:
        assert "\n" not in str(e)
