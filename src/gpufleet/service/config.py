"""What one ``gpufleet serve`` process is asked to run: read once at start, never changed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpufleet.model.fleet import Fleet
from gpufleet.model.tenancy import Tenancy


@dataclass(frozen=True)
class ServiceConfig:
    fleet: Fleet
    tenancy: Tenancy | None = None
    #: Where the SQLite store lives (``<data_dir>/gpufleet.db``) unless ``db`` names another.
    data_dir: Path = Path("gpufleet-data")
    #: An SQLAlchemy URL (``postgresql://…``, ``sqlite:///…``); None: SQLite under ``data_dir``.
    db: str | None = None
    source: str = "virtual"
    #: ``--source slurm``: slurmrestd's URL (None: the client commands), the slurm.conf the
    #: commands read (None: $SLURM_CONF), a JWT (None: $SLURM_JWT, else minted by ``scontrol
    #: token``), the user the JWT names.
    slurm_rest: str | None = None
    slurm_conf: str | None = None
    slurm_jwt: str | None = None
    slurm_user: str = "root"
    #: ``--source kubernetes``: "observer" (explain and estimate) or "scheduler" (binds gangs).
    kube_mode: str = "observer"
    kubeconfig: str | None = None
    #: Wall seconds between reads of a real source (slurm, kubernetes).
    poll_s: float = 3.0
    #: The engine profile the loop runs (policies/registry.py); None: gang-easy, or tenancy-easy
    #: when a tenancy is given.
    policy: str | None = None
    #: Simulated seconds per wall second (virtual source).
    speed: float = 1.0
    #: Keep a generated workload arriving (virtual source).
    demo_load: bool = False
    #: Wall seconds between loop ticks.
    tick_s: float = 0.5
    #: Run the loop on a thread (tests drive ``tick`` by hand with False).
    run_loop: bool = True
    #: Serve /metrics without a token (Prometheus scrapers often have none).
    metrics_public: bool = False
    seed: int = 0
    #: False: a front (service/front.py) that stores what it is asked and never runs the loop.
    lead: bool = True
    #: Source time ``clock_epoch`` at wall time ``clock_anchor`` (``time.time()``): the front and
    #: its scheduler process stamp submissions on one clock. None: the stored clock, from the
    #: first reading on.
    clock_epoch: float | None = None
    clock_anchor: float | None = None
    #: The URL this replica serves at, written to the store when it leads (followers name it).
    advertise_url: str | None = None
    #: argon2id cost of token hashes (argon2-cffi's defaults; RFC 9106's second profile). Tests
    #: lower them: the same algorithm, faster to check.
    argon2_time_cost: int = 3
    argon2_memory_kib: int = 65536
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def db_url(self) -> str:
        return self.db or f"sqlite:///{Path(self.data_dir) / 'gpufleet.db'}"

    @property
    def profile_name(self) -> str:
        if self.policy is not None:
            return self.policy
        return "tenancy-easy" if self.tenancy is not None else "gang-easy"
