import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

runner = CliRunner()


def test_ray_compare_prints_the_three_sides_and_the_paired_tests():
    res = runner.invoke(app, ["ray", "compare", "--nodes", "4", "--days", "0.25", "--seeds", "2"])
    assert res.exit_code == 0, res.output
    for side in ("uncoordinated", "gang-admit only", "coordinated", "held but idle", "paired p"):
        assert side in res.output


@pytest.mark.parametrize("args, says", [
    (["--nodes", "0"], "--nodes"), (["--load", "nan"], "--load"), (["--days", "1e300"], "--days"),
    (["--worker-gpus", "3"], "--worker-gpus"), (["--seeds", "0"], "--seeds")],
    ids=["no nodes", "a NaN load", "a huge number of days", "an odd worker size", "no seeds"])
def test_ray_compare_refuses_bad_input_in_one_line(args, says):
    res = runner.invoke(app, ["ray", "compare", *args])
    assert res.exit_code == 2 and says in res.output and "Traceback" not in res.output
