"""A real Slurm (Debian's 22.05, one slurmd per emulated node, slurmrestd with JWT auth) for the
`slurm`-marked tests.

The cluster is brought up once for this package (tests/integration is a package so that the
Slurm and Ray daemons stop after its last test instead of idling beside the unit tests) by the
project's copy of the script (tools/slurm-emulated-cluster.sh) in a directory and on ports of its
own, so concurrent test
sessions (several engineers, one machine) and a developer's cluster in /tmp/slurmtest never meet.
It is removed at the end by the script's `purge`: `down` stops exactly the daemons it started
(pid files, then its env marker, never by name), then the directory goes.
The tests skip only when they cannot run here: not root, or the packages cannot be installed.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from gpufleet.adapters.slurm.reader import SlurmCommandError

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "slurm-emulated-cluster.sh"
NODES = 8
#: Overrides as sites write them: a SchedulerParameters line in an included file replaces the
#: generated one (bf_interval=2, as in issue 18), and lines appended after it override a weight
#: again in another case. Slurm reads the last value of each key (test_slurm_conf_parsing.py).
INCLUDED = ("SchedulerParameters=bf_interval=2,bf_continue,bf_resolution=60,bf_window=1440,"
            "bf_max_job_test=1000,default_queue_depth=1000,sched_min_interval=100000\n"
            "PriorityWeightAge=500")
APPENDED = "priorityweightage=2000\nPriorityWeightJobSize=1500"  # then Epilog= (_write_epilog_hook)
SETTINGS = {
    "SLURMTEST_NODES": str(NODES),
    "SLURMTEST_NODES_PER_LEAF": "4",
    "SLURMTEST_ACCOUNTING": "slurmdbd",
    "SLURMTEST_CLUSTER": "gfit",
    "SLURMTEST_INCLUDE_CONF": INCLUDED,
    # a killed slurmd marks its node DOWN after this many seconds (test_slurm_node_fail.py)
    "SLURMTEST_SLURMD_TIMEOUT": "20",
}


#: Linux gives outgoing connections ports from 32768 (net.ipv4.ip_local_port_range): a port we
#: found free above it could be taken by a passing connection before the daemon binds it.
EPHEMERAL_PORTS_FROM = 32768


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _private_ports() -> dict[str, str]:
    """A block of free ports of our own, so concurrent test sessions get separate clusters.

    The block lies below the ephemeral range. Layout from the block's base: controller,
    slurmdbd, MariaDB, slurmrestd, then one port per node from base + 10 (the script puts node i
    on NODE_PORT_BASE + i).
    """
    rng = random.Random(os.getpid())
    for _ in range(50):
        base = rng.randrange(20000, EPHEMERAL_PORTS_FROM - 100, 100)
        if all(_port_free(p) for p in [base, base + 1, base + 2, base + 3,
                                       *range(base + 11, base + 11 + NODES)]):
            return {"SLURMTEST_CTLD_PORT": str(base), "SLURMTEST_DBD_PORT": str(base + 1),
                    "SLURMTEST_MYSQL_PORT": str(base + 2), "SLURMTEST_RESTD_PORT": str(base + 3),
                    "SLURMTEST_NODE_PORT_BASE": str(base + 10)}
    raise AssertionError("no free block of ports for the test cluster")


@dataclass(frozen=True)
class SlurmCluster:
    root: Path
    env: dict[str, str]

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def slurm_conf(self) -> str:
        return str(self.etc / "slurm.conf")

    def run(self, *argv: str, timeout: float = 30, check: bool = True) -> str:
        done = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout,
                              check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    @staticmethod
    def wait_until(predicate: Callable[[], T], timeout: float = 90.0, every: float = 0.3) -> T:
        """Poll: Slurm and its accounting catch up within a second or so, never instantly, and
        much later on a loaded machine (a passing wait ends at once, so the default is generous).
        A command that fails or times out inside the predicate (a busy slurmctld answers "Socket
        timed out"), through ``run`` or the project's SlurmCli, is tried again; the last such
        failure is reported at the deadline."""
        deadline = time.monotonic() + timeout
        last_error = ""
        while True:
            try:
                value = predicate()
            except (AssertionError, subprocess.TimeoutExpired, SlurmCommandError) as exc:
                value, last_error = None, f"; last error: {exc}"
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout:.0f} s{last_error}")
            time.sleep(every)

    def node_back(self, node: str) -> None:
        """Restart ``node``'s slurmd and wait until slurmctld hears from it again: sinfo marks a
        node it has not heard from with ``*`` (``idle*``), which is not back yet."""
        self.node_start(node)
        self.run("scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)
        self.wait_until(lambda: self.run("sinfo", "-h", "-n", node, "-o", "%T").strip() in (
            "idle", "mixed", "allocated"), timeout=120, every=1)

    def hold_epilog(self, job_id: str) -> Path:
        """Keep ``job_id`` COMPLETING once it ends, until the returned file is removed (see
        ``_write_epilog_hook``)."""
        hold = self.root / "hooks" / f"hold-{job_id}"
        hold.touch()
        return hold

    @property
    def restd_url(self) -> str:
        """slurmrestd (JWT auth; the script starts it with the cluster)."""
        return f"http://127.0.0.1:{self.env['SLURMTEST_RESTD_PORT']}"

    def restd_stop(self) -> None:
        """Stop slurmrestd (the script's restd-stop, by pid file): the REST source goes away."""
        done = _script("restd-stop", self.env, timeout=30)
        assert done.returncode == 0, done.stderr

    def restd_start(self) -> None:
        done = _script("restd-start", self.env, timeout=60)
        assert done.returncode == 0, done.stderr

    def node_kill(self, node: str) -> None:
        """Crash one emulated node: SIGKILL its slurmd (the script's node-kill, by pid file)."""
        done = _script("node-kill", self.env, timeout=30, arg=node)
        assert done.returncode == 0, done.stderr

    def node_start(self, node: str) -> None:
        done = _script("node-start", self.env, timeout=60, arg=node)
        assert done.returncode == 0, done.stderr

    def queue_ids(self) -> list[str]:
        return self.run("squeue", "-h", "-o", "%i").split()

    def cancel_all_and_wait(self, timeout: float = 30) -> None:
        """Isolation between tests: cheaper than a restart (the reference measured 4-8 s for that)."""
        self.run("scancel", "--user=root", check=False)
        deadline = time.monotonic() + timeout
        while self.queue_ids():
            if time.monotonic() > deadline:
                raise AssertionError(f"queue not empty after {timeout:.0f} s: {self.queue_ids()}")
            time.sleep(0.3)


def _script(action: str, env: dict[str, str], timeout: float, arg: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    argv = ["bash", str(SCRIPT), action, *([arg] if arg else [])]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _write_epilog_hook(script: Path) -> None:
    """An Epilog that waits while ``hooks/hold-<job id>`` exists (at most 120 s), so a test can keep
    a job COMPLETING for as long as it looks at it. Without a hold a dying gang's COMPLETING lasts
    from well under a second to a few seconds, and a poll can miss it on a loaded machine.
    ``hooks/`` is outside what the script's ``up`` wipes (state, spool, log, etc)."""
    hooks = script.parent
    shutil.rmtree(hooks, ignore_errors=True)  # a hold left by a crashed run would match new job ids
    hooks.mkdir(parents=True)
    script.write_text("#!/bin/sh\n"
                      f"hold={hooks}/hold-$SLURM_JOB_ID\n"
                      "i=0\n"
                      'while [ -e "$hold" ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done\n'
                      "exit 0\n")
    script.chmod(0o755)


@pytest.fixture(scope="package")
def slurm_cluster() -> Iterator[SlurmCluster]:
    if os.geteuid() != 0:
        pytest.skip("the emulated Slurm needs root (mknod for fake GPUs, slurmd as root)")
    ports = _private_ports()
    root = Path(f"/tmp/gpufleet-slurm-it-{ports['SLURMTEST_CTLD_PORT']}")
    epilog = root / "hooks" / "epilog.sh"
    env = dict(os.environ, **SETTINGS, **ports, SLURMTEST_DIR=str(root),
               SLURM_CONF=str(root / "etc" / "slurm.conf"),
               SLURMTEST_EXTRA_CONF=f"{APPENDED}\nEpilog={epilog}")
    installed = _script("install", env, timeout=900)
    if installed.returncode != 0:
        if shutil.which("apt-get") is None or not Path("/usr/sbin/slurmctld-wlm").exists():
            last = (installed.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"Slurm packages cannot be installed here: {last}")
        raise AssertionError(f"slurm install failed: {installed.stderr[-2000:]}")
    _write_epilog_hook(epilog)
    started = _script("up", env, timeout=300)
    try:
        if started.returncode != 0:
            raise AssertionError(f"slurm cluster did not come up:\n{started.stderr[-3000:]}")
        cluster = SlurmCluster(root, env)
        cluster.run("sacctmgr", "-i", "add", "account", "research,prod", check=False)
        cluster.run("sacctmgr", "-i", "add", "user", "root", "account=research,prod", check=False)
        # slurmdbd hands new associations to slurmctld in the background; until they arrive,
        # sbatch -A research is refused (AccountingStorageEnforce=associations)
        for account in ("research", "prod"):
            cluster.wait_until(lambda a=account: f"Account={a} " in cluster.run(
                "scontrol", "show", "assoc_mgr", "users=root", f"accounts={a}", "flags=assoc"),
                timeout=60, every=0.5)
        yield cluster
    finally:
        _script("purge", env, timeout=180)


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The package's cluster with an empty queue and no epilog hold before and after the test."""
    for hold in (slurm_cluster.root / "hooks").glob("hold-*"):
        hold.unlink(missing_ok=True)
    slurm_cluster.cancel_all_and_wait()
    yield slurm_cluster
    for hold in (slurm_cluster.root / "hooks").glob("hold-*"):
        hold.unlink(missing_ok=True)
    slurm_cluster.cancel_all_and_wait()


# --- Ray (tests marked `ray`): one local multi-node Ray cluster per session ----------------------

RAY_GPU_NODES = {"r0": 4, "r1": 4, "r2": 4}  # Ray worker nodes with declared (not real) GPUs


@dataclass(frozen=True)
class RayCluster:
    """A head with 2 CPUs (the sweep's tasks run there) and worker nodes with declared GPUs (the
    placement groups' bundles go there), each tagged with the resource ``gpufleet-node:<name>``."""

    address: str
    node_names: dict[str, str]  # Ray NodeID -> our node name
    gpus: dict[str, int]


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[RayCluster]:
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 0,
                                                            "include_dashboard": False})
    for name, gpus in RAY_GPU_NODES.items():
        cluster.add_node(num_cpus=0, num_gpus=gpus, resources={f"gpufleet-node:{name}": 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    names = {n["NodeID"]: k.split(":", 1)[1] for n in ray.nodes() if n["Alive"]
             for k in n["Resources"] if k.startswith("gpufleet-node:")}
    try:
        yield RayCluster(cluster.address, names, dict(RAY_GPU_NODES))
    finally:
        ray.shutdown()
        cluster.shutdown()
