"""`gpufleet sweep` on a real local Ray cluster gives the rows local processes give."""

import pytest

from gpufleet.sweep.cell import TIMING_COLUMNS
from gpufleet.sweep.run import run_sweep
from gpufleet.sweep.spec import parse_sweep

pytestmark = pytest.mark.ray

TINY = {"name": "tiny", "fleet": {"groups": [{"nodes": 4, "gpu": "H100-80GB", "gpus_per_node": 8}]},
        "workload": {"generator": {"days": 0.05, "offered_load": 0.9, "max_gpus": 16}}}


def without_timing(rows):
    return [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]


def test_a_3_by_3_by_5_grid_gives_identical_rows_on_local_processes_and_on_ray(tmp_path, ray_cluster):
    """3 loads × 3 policies × 5 seeds = 45 cells; every metric equal, only the wall times differ."""
    (tmp_path / "tiny.yaml").write_text(__import__("yaml").safe_dump(TINY))
    sw = parse_sweep({"scenarios": ["tiny.yaml"], "policies": ["gang-bestfit", "gang-easy", "per-pod"],
                      "seeds": 5, "parameters": {"offered_load": [0.5, 1.0, 1.5]}}, "<t>", tmp_path)
    assert len(sw.cells) == 45
    local = run_sweep(sw, tmp_path / "local", workers=2, report=False)
    on_ray = run_sweep(sw, tmp_path / "ray", ray_address="auto", report=False)
    assert (local.ran, on_ray.ran) == (45, 45)
    assert without_timing(on_ray.rows) == without_timing(local.rows)
    assert len({r["jobs_submitted"] for r in local.rows}) > 1  # the seeds and loads really differ


def test_a_sweep_started_on_local_processes_resumes_on_ray(tmp_path, ray_cluster):
    """12 cells (2 loads × 2 policies × 3 seeds): the 4 cells of seed 1 run locally, the other 8 on
    Ray into the same folder; the rows equal an all-local run's."""
    (tmp_path / "tiny.yaml").write_text(__import__("yaml").safe_dump(TINY))
    sw = parse_sweep({"scenarios": ["tiny.yaml"], "policies": ["gang-bestfit", "per-pod"], "seeds": 3,
                      "parameters": {"offered_load": [0.5, 1.5]}}, "<t>", tmp_path)
    full = run_sweep(sw, tmp_path / "full", workers=1, report=False)
    first = parse_sweep({**sw.spec.model_dump(), "seeds": [1]}, "<t>", tmp_path)
    part = run_sweep(first, tmp_path / "mixed", workers=1, report=False)
    assert part.ran == 4
    mixed = run_sweep(sw, tmp_path / "mixed", ray_address="auto", report=False)
    assert (mixed.ran, mixed.reused) == (8, 4)
    assert without_timing(mixed.rows) == without_timing(full.rows)
