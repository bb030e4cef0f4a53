import socket

import pytest

from gpufleet.sweep.executors import RayUnavailable, connect_ray, reachable


def test_an_address_that_is_not_host_and_port_is_refused_at_once():
    with pytest.raises(RayUnavailable, match="expected auto, local, HOST:PORT"):
        connect_ray("nonsense")


def test_a_port_nobody_listens_on_is_refused_without_waiting_for_ray():
    with socket.socket() as s:  # a port that was free a moment ago, now closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert not reachable(f"127.0.0.1:{port}")
    with pytest.raises(RayUnavailable, match="nothing answers there"):
        connect_ray(f"ray://127.0.0.1:{port}")


def test_a_listening_port_is_reachable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert reachable(f"127.0.0.1:{s.getsockname()[1]}")
