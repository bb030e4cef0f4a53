"""Our slurm.conf reader against Slurm's own parsing of the same file (``scontrol show config``).

The session cluster's slurm.conf (conftest.py) has the overrides sites write: the generated
``SchedulerParameters`` and weights, then ``Include site.conf`` with another SchedulerParameters
line and PriorityWeightAge=500, then appended lines ``priorityweightage=2000`` (lower case) and
``PriorityWeightJobSize=1500``. Whatever slurmctld ended up with, we must read the same.
"""

import re

import pytest

from gpufleet.adapters.slurm.compare_run import read_cluster
from gpufleet.adapters.slurm.conf import read_slurm_conf
from gpufleet.adapters.slurm.settings import BackfillSettings, priority_from_conf
from gpufleet.traces.slurm_sacct import parse_duration

pytestmark = pytest.mark.slurm


def show_config(slurm) -> dict[str, str]:
    out = {}
    for line in slurm.run("scontrol", "show", "config").splitlines():
        m = re.match(r"^(\w+)\s+= (.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def test_we_read_every_override_as_slurmctld_did(slurm) -> None:
    theirs = show_config(slurm)
    ours = read_slurm_conf(slurm.slurm_conf)
    # the included line replaced the generated one whole; Slurm shows it verbatim
    assert theirs["SchedulerParameters"] == ours.setting("SchedulerParameters")
    assert "bf_interval=2" in theirs["SchedulerParameters"]
    fleet, _ = read_cluster(slurm.slurm_conf)
    prio = priority_from_conf(ours, fleet)
    assert prio.weight_age == float(theirs["PriorityWeightAge"]) == 2000.0
    assert prio.weight_size == float(theirs["PriorityWeightJobSize"]) == 1500.0
    assert prio.weight_partition == float(theirs["PriorityWeightPartition"])
    assert prio.max_age_s == parse_duration(theirs["PriorityMaxAge"])
    assert prio.calc_period_s == parse_duration(theirs["PriorityCalcPeriod"])
    assert ours.cluster_name == theirs["ClusterName"]


def test_backfill_settings_from_slurms_own_string_match_ours(slurm) -> None:
    from gpufleet.adapters.slurm.conf import parse_slurm_conf

    theirs = parse_slurm_conf(f"SchedulerParameters={show_config(slurm)['SchedulerParameters']}\n")
    assert BackfillSettings.from_conf(theirs) == BackfillSettings.from_conf(read_slurm_conf(slurm.slurm_conf))
    assert BackfillSettings.from_conf(theirs).interval_s == 2.0


def test_the_nodes_we_read_are_the_nodes_slurm_has(slurm) -> None:
    names = sorted(re.findall(r"NodeName=(\S+)", slurm.run("scontrol", "show", "node", "-o")))
    fleet, _ = read_cluster(slurm.slurm_conf)
    assert sorted(str(n.id) for n in fleet.nodes) == names
    assert len({n.leaf for n in fleet.nodes}) == 2  # 8 nodes, 4 per leaf
