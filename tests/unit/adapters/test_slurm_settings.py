"""slurm.conf read as Slurm reads it (last value wins, Include, any case, SchedulerParameters) and
the Slurm-like profile those settings configure."""

from pathlib import Path

import pytest

from gpufleet.adapters.slurm.conf import parse_slurm_conf, read_slurm_conf
from gpufleet.adapters.slurm.settings import BackfillSettings, priority_from_conf, profile_from_conf
from gpufleet.model.errors import InputError
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.slurm_like import slurm_id_key
from gpufleet.testing.builders import fleet

DATA = Path(__file__).parents[2] / "data" / "slurm"
NODE = "NodeName=g[1-4] CPUs=64 RealMemory=512000 Gres=gpu:h100:8\n"


def test_a_key_given_twice_takes_its_last_value_in_any_case() -> None:
    conf = parse_slurm_conf("PriorityWeightAge=1000\n" + NODE + "priorityweightage=250\n")
    assert conf.setting("PriorityWeightAge") == "250"
    assert conf.setting("PRIORITYWEIGHTAGE") == "250"


def test_an_appended_scheduler_parameters_line_replaces_the_whole_earlier_one() -> None:
    """The emulated cluster's extra-conf appends a second SchedulerParameters: Slurm keeps only it,
    so bf_max_job_test falls back to its default (500) rather than keeping the first line's 1000."""
    conf = parse_slurm_conf("SchedulerParameters=bf_interval=1,bf_max_job_test=1000,bf_continue\n" + NODE
                            + "SchedulerParameters=bf_interval=2,bf_window=60\n")
    bf = BackfillSettings.from_conf(conf)
    assert (bf.interval_s, bf.window_s, bf.max_job_test, bf.continue_) == (2.0, 3600.0, 500, False)


def test_inside_one_scheduler_parameters_string_the_first_option_counts_as_slurms_search_finds_it() -> None:
    conf = parse_slurm_conf("SchedulerParameters=BF_INTERVAL=5,bf_resolution=300,bf_interval=9\n" + NODE)
    bf = BackfillSettings.from_conf(conf)
    assert (bf.interval_s, bf.resolution_s) == (5.0, 300.0)


def test_without_scheduler_parameters_the_backfill_settings_are_slurms_defaults() -> None:
    """slurm.conf(5), 22.05: bf_interval 30 s, bf_window 1440 min, bf_resolution 60 s, bf_max_job_test 500."""
    bf = BackfillSettings.from_conf(parse_slurm_conf(NODE))
    assert (bf.interval_s, bf.window_s, bf.resolution_s, bf.max_job_test) == (30.0, 86400.0, 60.0, 500)


def test_an_included_file_is_read_in_place_so_later_lines_override_it(tmp_path: Path) -> None:
    (tmp_path / "site.conf").write_text("PriorityWeightJobSize=7\nNodeName=g5 CPUs=8 RealMemory=1024 "
                                        "Gres=gpu:h100:8\n")
    (tmp_path / "slurm.conf").write_text("PriorityWeightJobSize=1\n" + NODE + "Include site.conf\n"
                                         "include   site-late*.conf\n")
    (tmp_path / "site-late1.conf").write_text("PriorityWeightAge=3\n")
    conf = read_slurm_conf(tmp_path / "slurm.conf")
    assert conf.setting("PriorityWeightJobSize") == "7"
    assert conf.setting("PriorityWeightAge") == "3"
    assert [n.name for n in conf.nodes] == ["g1", "g2", "g3", "g4", "g5"]


def test_an_include_of_a_missing_file_names_the_including_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text(NODE + "Include nowhere.conf\n")
    with pytest.raises(InputError, match=r"slurm.conf: line 2: Include: no file matches"):
        read_slurm_conf(tmp_path / "slurm.conf")


def test_a_file_that_includes_itself_is_an_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text(NODE + "Include slurm.conf\n")
    with pytest.raises(InputError, match="expected no include loop, got slurm.conf → slurm.conf"):
        read_slurm_conf(tmp_path / "slurm.conf")


def test_priority_weights_and_ages_come_from_the_last_lines_of_the_conf() -> None:
    """PriorityMaxAge=1-0 is one day; PriorityCalcPeriod=2 is two minutes (bare numbers are minutes)."""
    conf = parse_slurm_conf("PriorityType=priority/multifactor\nPriorityWeightAge=10\n"
                            "PriorityWeightJobSize=5\nPriorityMaxAge=00:10:00\nPriorityCalcPeriod=5\n" + NODE
                            + "PriorityWeightAge=400\nPriorityMaxAge=1-0\nPriorityCalcPeriod=2\n")
    prio = priority_from_conf(conf, fleet().leaves(1, nodes=4).build())
    assert (prio.weight_age, prio.weight_size, prio.max_age_s, prio.calc_period_s) == (400, 5, 86400, 120)


def test_a_weight_that_is_not_a_number_is_one_clear_error() -> None:
    conf = parse_slurm_conf("PriorityType=priority/multifactor\nPriorityWeightAge=lots\n" + NODE)
    with pytest.raises(InputError, match="PriorityWeightAge: expected a whole number, got 'lots'"):
        priority_from_conf(conf, fleet().leaves(1, nodes=4).build())


def test_the_profile_takes_its_cycle_and_depth_from_bf_interval_and_bf_max_job_test() -> None:
    conf = read_slurm_conf(DATA / "slurm.conf")
    setup = profile_from_conf(conf, fleet().leaves(2, nodes=8).build())
    params = conf.scheduler_params()
    assert setup.cycle_interval_s == float(params["bf_interval"])
    assert setup.profile.reserver.depth == int(params["bf_max_job_test"])  # type: ignore[attr-defined]


def _job(jid: str, label: str | None = None) -> Job:
    labels = (("slurm.job_id", label),) if label else ()
    return Job(id=JobId(jid), tenant=TenantId("t"), pod_sets=(PodSet("main", 1, PodRequest(gpus=1)),),
               submit_time=0.0, run_time=1.0, labels=labels)


def test_slurm_job_ids_sort_as_numbers_with_array_tasks_and_het_components_after_their_job() -> None:
    ids = ["10", "5", "10_10", "10_2", "11", "9+1", "9+0", "9"]
    ordered = sorted(ids, key=lambda i: slurm_id_key(_job(i)))
    assert ordered == ["5", "9", "9+0", "9+1", "10", "10_2", "10_10", "11"]


def test_the_slurm_id_label_orders_a_job_whose_own_id_is_not_slurms() -> None:
    assert slurm_id_key(_job("z", "9")) < slurm_id_key(_job("a", "10"))
    assert slurm_id_key(_job("j0002")) > slurm_id_key(_job("999999"))


def _table_two_leaves():
    """gpu-style fleet of two leaves × 4 nodes × 8 GPUs (builders default), as a NodeTable."""
    from gpufleet.engine.snapshot import NodeTable

    return NodeTable.from_fleet(fleet().leaves(2, nodes=4).build())


def _one_set(jid: str, replicas: int, gpus: int) -> Job:
    return Job(id=JobId(jid), tenant=TenantId("t"),
               pod_sets=(PodSet("main", replicas, PodRequest(gpus=gpus)),), submit_time=0.0, run_time=1.0)


def test_cons_tres_takes_the_first_node_in_conf_order_not_the_tightest_one() -> None:
    """Node 1 has 1 GPU free, node 0 all 8: best fit would pick node 1 for a 1-GPU job; Slurm,
    with every leaf able to host it and equal weights, takes leaf 0's first node, node 0."""
    from gpufleet.policies.slurm_like import cons_tres_choice

    table = _table_two_leaves()
    table.take(1, PodRequest(gpus=7))
    chosen = cons_tres_choice(_one_set("a", 1, 1), table)
    assert chosen is not None and [b.node for b in chosen] == [0]


def test_cons_tres_puts_a_gang_on_the_leaf_with_the_fewest_usable_nodes_that_still_holds_it() -> None:
    """Leaf 0 (nodes 0-3) has node 1 busy: 3 usable nodes for 8 GPUs; leaf 1 has 4. A 2-node gang
    goes best fit to leaf 0, on its first two usable nodes (0 and 2); a 4-node gang to leaf 1."""
    from gpufleet.policies.slurm_like import cons_tres_choice

    table = _table_two_leaves()
    table.take(1, PodRequest(gpus=8))
    two = cons_tres_choice(_one_set("g2", 2, 8), table)
    four = cons_tres_choice(_one_set("g4", 4, 8), table)
    assert two is not None and [b.node for b in two] == [0, 2]
    assert four is not None and [b.node for b in four] == [4, 5, 6, 7]


def test_cons_tres_spans_leaves_fullest_first_when_no_leaf_can_hold_the_gang() -> None:
    """5 nodes × 8 GPUs cannot fit under one leaf of 4: the spine holds all 7 usable nodes; its
    fuller leaf (leaf 1, 4 usable) is filled first, then leaf 0 from its first usable node."""
    from gpufleet.policies.slurm_like import cons_tres_choice

    table = _table_two_leaves()
    table.take(1, PodRequest(gpus=8))
    five = cons_tres_choice(_one_set("g5", 5, 8), table)
    assert five is not None and [b.node for b in five] == [4, 5, 6, 7, 0]


@pytest.mark.parametrize("option", ["bf_interval=0", "bf_interval=99999999999999999999", "bf_window=nan",
                                    "bf_resolution=7200", "bf_max_job_test=-5"])
def test_a_backfill_option_outside_slurms_range_is_one_error_naming_it(option: str) -> None:
    conf = parse_slurm_conf(f"SchedulerParameters=bf_continue,{option}\n" + NODE)
    key = option.split("=")[0]
    with pytest.raises(InputError, match=f"SchedulerParameters: {key}: expected a whole number"):
        BackfillSettings.from_conf(conf)


def test_an_include_loop_through_two_files_is_named_as_a_loop(tmp_path: Path) -> None:
    """a.conf includes b.conf which includes a.conf again: Slurm would recurse; we name the loop."""
    (tmp_path / "slurm.conf").write_text(NODE + "Include a.conf\n")
    (tmp_path / "a.conf").write_text("PriorityWeightAge=1\nInclude b.conf\n")
    (tmp_path / "b.conf").write_text("include a.conf\n")
    with pytest.raises(InputError, match=r"b.conf: line 1: Include: expected no include loop, "
                                         r"got a.conf → b.conf → a.conf"):
        read_slurm_conf(tmp_path / "slurm.conf")


@pytest.mark.timeout(60)
def test_a_glob_include_that_matches_its_own_file_is_a_loop_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text(NODE + "Include *.inc\n")
    for name in ("x.inc", "y.inc"):
        (tmp_path / name).write_text("Include *.inc\n")
    with pytest.raises(InputError, match="include loop"):
        read_slurm_conf(tmp_path / "slurm.conf")


def test_a_node_named_on_two_nodename_lines_is_one_error_naming_the_second_line() -> None:
    with pytest.raises(InputError, match="line 2: node g3 is defined twice"):
        parse_slurm_conf(NODE + "NodeName=g3 CPUs=8 RealMemory=1000\n")


def test_continuations_join_lower_case_keys_and_a_comment_ends_the_continuation() -> None:
    """Slurm's parser (parse_config.c _get_next_line) strips the comment before it looks for the
    trailing backslash, so a backslash inside a comment does not continue the line: RealMemory on
    the third line is a separate (ignored-for-nodes) setting and the node keeps the default 1 MB."""
    conf = parse_slurm_conf("nodename=g[1-2] cpus=32 \\\n   gres=gpu:h100:4 \\\n   realmemory=2000\n"
                            "NodeName=g3 CPUs=8 Gres=gpu:h100:2   # two per node \\\n"
                            "RealMemory=1000\nPartitionName=p Nodes=ALL\n")
    assert [(n.name, n.cpus, n.real_memory_mb, [str(g) for g in n.gres]) for n in conf.nodes] == [
        ("g1", 32, 2000, ["gpu:h100:4"]), ("g2", 32, 2000, ["gpu:h100:4"]), ("g3", 8, 1, ["gpu:h100:2"])]
    assert conf.setting("realmemory") == "1000"
