"""`gpufleet simulate`'s reliability table: elastic and upgrade rows appear when every policy ran them."""

from __future__ import annotations

from gpufleet.cli.simulate import print_reliability

BASE = {"goodput_pct": 90.0, "node_failures": 1, "interruptions": 1, "recovery_p50_s": 180.0,
        "recovery_p95_s": 180.0, "spares_used": 0, "no_spare_when_needed": 0, "lost_gpu_hours_by_cause": {}}
UPGRADE = {"upgrade_rollout_hours": 0.3722, "upgrade_nodes_upgraded": 4, "upgrade_nodes_failed": 0,
           "upgrade_jobs_drained": 2, "upgrade_node_hours_out": 0.7444}


def test_upgrade_rows_show_when_every_policy_had_a_rollout(capsys):
    print_reliability({"a": {**BASE, **UPGRADE}, "b": {**BASE, **UPGRADE}})
    out = capsys.readouterr().out
    assert "driver upgrade: nodes upgraded" in out and "0.4 h" in out


def test_no_upgrade_rows_without_a_rollout_and_none_when_only_one_policy_has_them(capsys):
    print_reliability({"a": dict(BASE)})
    print_reliability({"a": {**BASE, **UPGRADE}, "b": dict(BASE)})
    assert "driver upgrade" not in capsys.readouterr().out


def test_the_terminal_prints_the_studies_and_says_when_the_policies_ran_alike(capsys):
    """Two policies with the same reliability rows (one gang on its own fleet places alike): the
    terminal says so and prints each study's table — the same rows the HTML report shows."""
    from gpufleet.report.reliability import Studies

    st = Studies(off=False, young=1462.0, daly=1422.6, daly_exact=1422.6, curve=[])
    st.tables["Recovery: 30 minutes or 3 minutes"] = (
        ["recovery", "goodput (Daly)", "goodput (simulated, 95% CI)", "verdict"],
        [["30-minute", "95.48%", "95.52% ± 0.10% (n=6)", "agrees"],
         ["3-minute", "97.23%", "97.20% ± 0.05% (n=6)", "agrees"]])
    print_reliability({"a": dict(BASE), "b": dict(BASE)}, st)
    out = capsys.readouterr().out
    assert "ran this scenario identically" in out
    assert "Recovery: 30 minutes or 3 minutes" in out and "97.20% ± 0.05% (n=6)" in out
