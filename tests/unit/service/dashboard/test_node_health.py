"""A node's health layers and its last diagnosis, over a real service (service/node_health.py).

The fleet is the service tests' 2 × 4 nodes of 8 H100s. The bundles are real tool outputs
(tests/data/ops/bundles, provenance in tests/data/ops/PROVENANCE.md); what ops.diagnose names for
each is pinned by tests/unit/ops: xid79-fallen-off-bus → hardware_pci (GPU fell off the bus,
reboot; every later layer downstream), toolkit-not-configured → container_toolkit (PCI, driver
and Xid checked healthy, no file speaks for the device plugin).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app as cli
from gpufleet.service import node_health as nh
from gpufleet.sim.cluster import set_schedulable

from .test_pages import ORIGIN, sign_in, submit, text

BUNDLES = Path(__file__).parents[3] / "data" / "ops" / "bundles"


def layers(s, node: str, headers: dict) -> dict[str, tuple[str, str]]:
    r = s.client.get(f"/api/v1/nodes/{node}/health", headers=headers)
    assert r.status_code == 200, r.text
    return {row["key"]: (row["state"], row["words"]) for row in r.json()["layers"]}


def cli_json(bundle: str) -> dict:
    r = CliRunner().invoke(cli, ["node", "diagnose", str(BUNDLES / bundle), "-o", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def files(bundle: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((BUNDLES / bundle).iterdir())}


def test_a_node_in_service_has_every_layer_ok_and_all_its_gpus_allocatable(served) -> None:
    s = served
    submit(s, "j", gpus=8)
    s.tick()
    node = s.svc.snapshot().table.names[0]
    got = layers(s, node, s.viewer)
    assert [got[k][0] for k in ("driver", "toolkit", "device_plugin", "allocatable")] == ["ok"] * 4
    assert got["allocatable"][1] == "8 of 8 GPUs (0 free)"   # j's 8 GPUs are on the first node


def test_a_drained_node_shows_on_allocatable_only(served) -> None:
    s = served
    s.tick()
    node = s.svc.snapshot().table.names[1]
    assert s.client.post(f"/api/v1/nodes/{node}/drain", headers=s.admin).status_code == 200
    s.tick()
    got = layers(s, node, s.viewer)
    assert s.client.get(f"/api/v1/nodes/{node}/health", headers=s.viewer).json()["state"] == "draining"
    assert [got[k][0] for k in ("driver", "toolkit", "device_plugin")] == ["ok"] * 3
    assert got["allocatable"] == ("out", "0 of 8 GPUs: drained by an admin: running jobs finish, no new "
                                         "work; 0 still held by running work")


def test_a_failed_node_shows_the_fault_on_the_driver_layer_and_the_rest_as_collateral(served) -> None:
    s = served
    submit(s, "j", gpus=8)
    s.tick()
    node = s.svc.snapshot().table.names[0]
    assert s.client.post(f"/api/v1/nodes/{node}/fail", headers=s.admin).status_code == 200
    s.tick()
    r = s.client.get(f"/api/v1/nodes/{node}/health", headers=s.viewer).json()
    assert r["state"] == "quarantined" and r["fleet_label"] == "down"
    got = {row["key"]: row["state"] for row in r["layers"]}
    assert got == {"driver": "fault", "toolkit": "collateral", "device_plugin": "collateral",
                   "allocatable": "out"}


def test_a_posted_cli_diagnosis_becomes_the_nodes_last_diagnosis_and_names_the_layer(served) -> None:
    s = served
    s.tick()
    node = s.svc.snapshot().table.names[2]
    doc = cli_json("xid79-fallen-off-bus")
    r = s.client.post(f"/api/v1/nodes/{node}/diagnosis", json=doc, headers=s.admin)
    assert r.status_code == 200, r.text
    got = layers(s, node, s.viewer)
    assert got["driver"] == ("fault", "GPU fell off the PCIe bus; action: reboot")
    assert got["toolkit"][0] == got["device_plugin"][0] == "collateral"
    health = s.client.get(f"/api/v1/nodes/{node}/health", headers=s.viewer).json()
    # healthy → suspect → draining → quarantined → diagnosing → repaired (a reboot is a fix in place)
    assert health["next_states"] == ["suspect", "draining", "quarantined", "diagnosing", "repaired"]
    audit = [e for e in s.svc.store.audit_log(limit=100) if e["action"] == "node.diagnosis"]
    assert [(e["target"], e["outcome"], e["after"]["layer"]) for e in audit] == [(node, "ok", "hardware_pci")]
    sign_in(s, s.viewer)
    page = text(s.client.get(f"/nodes/{node}").text)
    assert "Last diagnosis" in page and "GPU fell off the PCIe bus" in page and "hardware_pci" in page


def test_a_bundle_is_diagnosed_by_the_service_and_the_newest_diagnosis_wins(served) -> None:
    s = served
    s.tick()
    node = s.svc.snapshot().table.names[3]
    assert s.client.post(f"/api/v1/nodes/{node}/diagnosis", json=cli_json("xid79-fallen-off-bus"),
                         headers=s.admin).status_code == 200
    r = s.client.post(f"/api/v1/nodes/{node}/diagnosis/bundle",
                      json={"files": files("toolkit-not-configured")}, headers=s.admin)
    assert r.status_code == 200, r.text
    # the same answer as the CLI on the same files (less the CLI's health walk, which the page derives)
    cli_doc = {k: v for k, v in cli_json("toolkit-not-configured").items()
               if k not in ("health", "health_path")}
    assert r.json()["how"] == "bundle" and r.json()["diagnosis"] == cli_doc
    got = layers(s, node, s.viewer)
    assert got["driver"][0] == "ok" and got["toolkit"][0] == "fault"
    assert got["device_plugin"] == ("unchecked", "not checked: no file in the bundle speaks for it")


def test_only_an_admin_attaches_a_diagnosis_and_a_refusal_is_audited(served) -> None:
    s = served
    s.tick()
    node = s.svc.snapshot().table.names[0]
    for who in (s.viewer, s.member_a):
        r = s.client.post(f"/api/v1/nodes/{node}/diagnosis/bundle", json={"files": files("healthy-h100")},
                          headers=who)
        assert r.status_code == 403
    assert s.client.get(f"/api/v1/nodes/{node}/health", headers=s.viewer).json()["last_diagnosis"] is None
    refused = [e for e in s.svc.store.audit_log(limit=100) if e["action"] == "node.diagnosis"]
    assert [e["outcome"] for e in refused] == ["refused", "refused"]


def test_bad_diagnosis_input_gets_one_line_naming_the_field(served) -> None:
    s = served
    s.tick()
    node = s.svc.snapshot().table.names[0]
    r = s.client.post(f"/api/v1/nodes/{node}/diagnosis", headers=s.admin,
                      json={"layer": "gpu", "failure": "x", "action": "none"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "layer"
    r = s.client.post(f"/api/v1/nodes/{node}/diagnosis/bundle", json={"files": {"../etc/passwd": "x"}},
                      headers=s.admin)
    assert r.status_code == 422 and r.json()["error"]["message"].startswith("files: '../etc/passwd' is not")
    assert s.client.post("/api/v1/nodes/nope/diagnosis", json=cli_json("healthy-h100"),
                         headers=s.admin).status_code == 404


def test_an_admin_attaches_from_the_node_page_by_paste_and_by_files(served) -> None:
    s = served
    s.tick()
    node = s.svc.snapshot().table.names[0]
    sign_in(s, s.admin)
    assert 'id="diagnosis-form"' in s.client.get(f"/nodes/{node}").text
    h = {**ORIGIN, "HX-Request": "true"}
    r = s.client.post(f"/nodes/{node}/diagnosis", headers=h,
                      data={"result": json.dumps(cli_json("driver-not-loaded"))})
    assert r.status_code == 200
    assert "diagnosis attached (kernel driver: the NVIDIA kernel module is not loaded)" in r.text
    r = s.client.post(f"/nodes/{node}/diagnosis", headers=h,
                      data={"bundle": json.dumps(files("healthy-h100"))})
    # the bundle's nvidia-smi -q holds 1 of its 8 GPU blocks: the page repeats the CLI's own verdict
    healthy = cli_json("healthy-h100")["failure"]
    assert r.status_code == 200 and f"diagnosis attached (none: {healthy})" in r.text
    page = text(s.client.get(f"/nodes/{node}").text)   # the bundle is cut: the page says so
    assert "Not a confident verdict: nvidia-smi-q.txt: 1 of 8 GPU blocks" in page
    r = s.client.post(f"/nodes/{node}/diagnosis", data={"result": "{nope"}, headers=h)
    assert r.status_code == 422 and 'id="action-error">result: not JSON' in r.text
    sign_in(s, s.viewer)
    assert 'id="diagnosis-form"' not in s.client.get(f"/nodes/{node}").text
    assert s.client.post(f"/nodes/{node}/diagnosis", data={"result": "{}"}, headers=h).status_code == 403


@pytest.mark.parametrize(("reason", "state", "driver", "allocatable"), [
    pytest.param("down*", "quarantined", "fault", "0 of 8 GPUs: out of service (down*)",
                 id="Slurm DOWN* (not responding)"),
    pytest.param("fail", "quarantined", "fault", "0 of 8 GPUs: failed: its jobs were requeued", id="failed"),
    pytest.param("drained", "draining", "ok",
                 "0 of 8 GPUs: drained by an admin: running jobs finish, no new work", id="Slurm DRAINED"),
    pytest.param("reservation maint", "healthy", "ok", "0 of 8 GPUs: out of service (reservation maint)",
                 id="held for a Slurm reservation"),
])
def test_a_sources_out_of_service_words_pick_the_layer(served, reason: str, state: str, driver: str,
                                                        allocatable: str) -> None:
    """The reasons live/slurm.py reports (the node state's last word, lowered) as the virtual
    fleet's: a node that is down or failed broke below the scheduler; drained or reserved did not."""
    s = served
    s.tick()
    snap = s.svc.snapshot()
    table = snap.table.copy()
    set_schedulable(table, 0, False)
    node = table.names[0]
    out = nh.health(replace(snap, table=table, out_of_service={node: reason}), node, None)
    got = {row.key: (row.state, row.words) for row in out.layers}
    assert out.state == state
    assert got["driver"][0] == driver
    assert got["allocatable"] == ("out", allocatable + "; 0 still held by running work")
