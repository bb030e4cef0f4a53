"""A polled source builds the profile its cycles run once, not at every snapshot.

The snapshot names the running profile (explain's ``policy``) at every tick; over Kubernetes that
name came from ``default_profile()``, which builds the policy objects anew each time. The source is
the ``kubernetes`` one over ApiServerDouble (recorded objects, tests/unit/live/api_double.py: no API
server runs here)."""

from __future__ import annotations

from gpufleet.engine.status import Status
from gpufleet.live.kubernetes import KubernetesSource
from gpufleet.live.snapshot import take_snapshot

from .api_double import ApiServerDouble
from .test_k8s_scheduler import NOW, eight_gpu_node, gpu_pod


class CountingSource(KubernetesSource):
    built = 0

    def default_profile(self):  # noqa: ANN201 - the base's signature
        CountingSource.built += 1
        return super().default_profile()


def test_ten_snapshots_and_two_cycle_inputs_build_the_profile_once_and_name_it():
    src = CountingSource(ApiServerDouble([eight_gpu_node("a"), gpu_pod("w0", gang="train")]), "observer",
                         poll_s=1.0, wall=lambda: NOW)
    src.advance(NOW)
    statuses: dict[str, Status] = {}
    names = {take_snapshot(src, NOW + i, statuses, None, i).extra["profile"] for i in range(10)}  # type: ignore[arg-type]
    src.cycle_input(NOW, 0)
    src.cycle_input(NOW, 1)
    assert names == {"gang-conservative"}
    assert CountingSource.built == 1
