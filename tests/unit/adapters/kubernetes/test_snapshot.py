import json

import pytest

from gpufleet.adapters.kubernetes.snapshot import load
from gpufleet.model.errors import InputError

from .conftest import DATA


def test_a_kubectl_list_of_nodes_loads_every_node():
    snap = load(DATA / "nodes-aks.json")
    assert [n["metadata"]["name"] for n in snap.of("Node")] == [
        "aks-agentpool-30520393-vmss000000", "aks-agentpool-30520393-vmss000001",
        "aks-agentpool-30520393-vmss000002"]


def test_a_folder_of_files_one_per_kind_loads_as_one_snapshot_and_counts_unknown_kinds(cluster_dir):
    snap = load(cluster_dir)
    assert len(snap.of("Node")) == 4 and len(snap.of("Pod")) == 8 and len(snap.of("PodGroup")) == 1
    assert snap.skipped == {"ReplicaSet (apps/v1)": 1}


def test_a_typed_list_gives_its_items_their_kind(tmp_path):
    items = json.loads((DATA / "nodes-aks.json").read_text())["items"]
    for it in items:
        del it["kind"]
    p = tmp_path / "nodes.json"
    p.write_text(json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": items}))
    assert len(load(p).of("Node")) == 3


@pytest.mark.parametrize("content, expected", [
    (b"", "empty file"),
    (b"\x00\x01\x02binary", "binary file"),
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "expected a JSON object"),
    (b'{"apiVersion": "v1", "items": [{"metadata": {}}], "kind": "List"}', "needs a kind"),
    (b'{"a": NaN}', "not valid JSON"),
], ids=["empty", "binary", "truncated JSON", "a bare array", "an object without kind", "NaN"])
def test_a_bad_snapshot_gets_one_line_naming_the_file(tmp_path, content, expected):
    p = tmp_path / "snap.json"
    p.write_bytes(content)
    with pytest.raises(InputError) as e:
        load(p)
    assert str(p) in str(e.value) and expected in str(e.value) and "\n" not in str(e.value)


def test_a_missing_path_and_an_empty_folder_are_named(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load(tmp_path / "nope.json")
    with pytest.raises(InputError, match="no .json files"):
        load(tmp_path)


def test_two_different_objects_with_one_name_are_refused_naming_both_files(tmp_path):
    """A Pod listed in two files of a folder with different requests would have its GPUs counted
    twice; the same object twice (overlapping kubectl commands) is kept once."""
    import json

    from gpufleet.adapters.kubernetes.snapshot import load
    from gpufleet.model.errors import InputError

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"containers": [{"name": "c"}]}}
    (tmp_path / "a.json").write_text(json.dumps({"kind": "List", "items": [pod]}))
    (tmp_path / "b.json").write_text(json.dumps({"kind": "List", "items": [pod]}))
    assert len(load(tmp_path).of("Pod")) == 1
    gpus = {"limits": {"nvidia.com/gpu": "8"}}
    changed = {**pod, "spec": {"containers": [{"name": "c", "resources": gpus}]}}
    (tmp_path / "b.json").write_text(json.dumps({"kind": "List", "items": [changed]}))
    with pytest.raises(InputError) as err:
        load(tmp_path)
    assert "Pod ml/p" in str(err.value) and "two different objects with one name (also in" in str(err.value)
    assert str(tmp_path / "a.json") in str(err.value) and str(tmp_path / "b.json") in str(err.value)
