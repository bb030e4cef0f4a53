from pathlib import Path

import numpy as np
import pytest

from gpufleet.traces.openb import OpenbFormatError, read_nodes, read_pods

NODES = """sn,cpu_milli,memory_mib,gpu,model
node-a,64000,262144,2,P100
node-b,96000,393216,8,G2
cpu-only,32000,131072,0,
"""

PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,\
scheduled_time
pod-1,12000,16384,1,1000,,LS,Running,0,1,0
pod-2,6000,12288,1,460,T4|P100,LS,Running,0,1,0
pod-3,4000,8192,0,0,nan,BE,Running,0,1,0
pod-4,32000,65536,8,1000,G2,LS,Running,0,1,0
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_node_list_becomes_columns_with_an_empty_model_for_cpu_only_nodes(tmp_path):
    nodes = read_nodes(write(tmp_path, "nodes.csv", NODES))
    assert nodes.names == ("node-a", "node-b", "cpu-only")
    assert nodes.gpus.tolist() == [2, 8, 0]
    assert nodes.model == ("P100", "G2", "")
    assert nodes.total_gpu_milli == 10_000


def test_a_pod_list_keeps_per_gpu_milli_and_the_allowed_model_set(tmp_path):
    pods = read_pods(write(tmp_path, "pods.csv", PODS))
    assert pods.gpu_milli.tolist() == [1000, 460, 0, 1000]
    assert pods.gpu_spec == (frozenset(), frozenset({"T4", "P100"}), frozenset(), frozenset({"G2"}))
    assert np.array_equal(pods.total_gpu_milli, [1000, 460, 0, 8000])


def test_a_pod_list_without_the_gpu_spec_column_is_read_as_unconstrained(tmp_path):
    text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,2,1000\n"
    pods = read_pods(write(tmp_path, "multigpu.csv", text))
    assert pods.gpu_spec == (frozenset(),)


def test_a_pod_sharing_several_gpus_is_read_with_its_per_gpu_milli(tmp_path):
    """2 GPUs at 500 milli each: 2 x 500 = 1,000 milli requested in all."""
    text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,2,500\n"
    pods = read_pods(write(tmp_path, "multishare.csv", text))
    assert pods.num_gpu.tolist() == [2] and pods.gpu_milli.tolist() == [500]
    assert pods.total_gpu_milli.tolist() == [1000]


@pytest.mark.parametrize(("text", "expected"), [
    ("name,cpu_milli,memory_mib,num_gpu\np,1,1,0\n", "missing column 'gpu_milli'"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,abc,1,0,0\n", "row 2, field 'cpu_milli'"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1500\n", "between 0 and 1000"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,-1,0\n", "non-negative integer"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", "no rows"),
], ids=[
    "a missing column is named with the columns expected",
    "a non-numeric value names its row and field",
    "a per-gpu milli above 1000 is rejected",
    "a negative count is rejected",
    "an empty file is rejected",
])
def test_bad_pod_input_is_one_line_naming_the_file(tmp_path, text, expected):
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(OpenbFormatError) as err:
        read_pods(path)
    message = str(err.value)
    assert expected in message
    assert str(path) in message
    assert "\n" not in message


def test_a_missing_node_file_is_reported_by_name(tmp_path):
    with pytest.raises(OpenbFormatError, match="nodes.csv: file not found"):
        read_nodes(tmp_path / "nodes.csv")


def test_a_gpu_node_without_a_model_is_rejected(tmp_path):
    path = write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nx,1,1,2,\n")
    with pytest.raises(OpenbFormatError, match="field 'model'"):
        read_nodes(path)


def test_a_node_list_without_any_gpu_is_rejected_by_name(tmp_path):
    path = write(tmp_path, "cpu.csv", "sn,cpu_milli,memory_mib,gpu,model\nc1,32000,131072,0,\n")
    with pytest.raises(OpenbFormatError, match=r"cpu\.csv: no node has GPUs"):
        read_nodes(path)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e400"])
def test_non_finite_pod_numbers_are_rejected(tmp_path, value):
    path = write(tmp_path, "p.csv", f"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,{value},1,1,1000\n")
    with pytest.raises(OpenbFormatError, match="cpu_milli"):
        read_pods(path)


def test_a_non_utf8_pod_file_is_named(tmp_path):
    path = tmp_path / "bin.csv"
    path.write_bytes(b"name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\xff\xfe,1,1,1,1000\n")
    with pytest.raises(OpenbFormatError, match=r"bin\.csv"):
        read_pods(path)


@pytest.mark.parametrize("value", ["1e30", "99999999999999999999", "9223372036854775808"])
def test_a_number_too_large_for_the_columns_is_one_line_with_the_bound(tmp_path, value):
    """Found by fuzzing: 1e30 CPU milli overflowed int64 with a traceback."""
    path = write(tmp_path, "n.csv", f"sn,cpu_milli,memory_mib,gpu,model\nn1,{value},1,1,V100\n")
    with pytest.raises(OpenbFormatError, match="between 0 and 1000000000000"):
        read_nodes(path)


def test_an_empty_file_or_a_directory_is_named_as_such(tmp_path):
    empty = write(tmp_path, "e.csv", "")
    with pytest.raises(OpenbFormatError, match=r"e\.csv: empty file"):
        read_nodes(empty)
    with pytest.raises(OpenbFormatError, match="is a directory"):
        read_pods(tmp_path)
