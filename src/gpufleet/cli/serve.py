"""`gpufleet serve`: the fleet's control plane as a service; `gpufleet serve token …`: its tokens.

With no arguments: 127.0.0.1:8080, a SQLite store under ./gpufleet-data/, the default scenario's
fleet as a virtual fleet on the wall clock. The first start prints an admin token (kept nowhere
but in the store, as an argon2 hash: keep it).
"""

from __future__ import annotations

import math
import os
import socket
import sys
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from gpufleet.cli.common import console, err_console, fail, one_line_errors
from gpufleet.cli.main import app

serve_app = typer.Typer(help="Run the fleet's control plane: REST API, store, live loop, metrics. "
                             "With no command: start it, as the options below say; `token`: its API "
                             "tokens.", invoke_without_command=True, no_args_is_help=False,
                        subcommand_metavar="[COMMAND]")
token_app = typer.Typer(help="API tokens: create, list, revoke.", no_args_is_help=True)
serve_app.add_typer(token_app, name="token")
app.add_typer(serve_app, name="serve")

#: The SQLite store's file under --data-dir.
DB_FILE = "gpufleet.db"
DataDir = Annotated[Path, typer.Option("--data-dir", help="Where the SQLite store lives.")]
Db = Annotated[str | None, typer.Option(
    "--db", help="A database URL (postgresql://user@host/db); default: SQLite under --data-dir.")]


def _store(data_dir: Path, db: str | None, existing: bool = False):  # noqa: ANN202
    """The store; with ``existing``, a SQLite store that is not there is refused rather than made
    (``--data-dir`` is relative: a token command run from another folder listed an empty store it
    had just made, and its tokens went where the server never reads)."""
    from gpufleet.service.store import Store, StoreError
    if db is None and data_dir.exists() and not data_dir.is_dir():
        raise fail(f"--data-dir {data_dir}: is a file; expected a directory (created if missing)")
    if existing and db is None and not (data_dir / DB_FILE).exists():
        raise fail(f"--data-dir {data_dir}: no store there ({data_dir / DB_FILE} does not exist); give "
                   "the --data-dir (or --db) that gpufleet serve runs with")
    try:
        return Store(db or f"sqlite:///{data_dir / DB_FILE}")
    except StoreError as e:
        raise fail(str(e)) from None


def _check_port(host: str, port: int) -> None:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise fail(f"--host {host!r}: cannot resolve ({e.strerror})") from None
    fam, _, _, _, addr = infos[0]
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
    except OSError as e:
        raise fail(f"--host {host} --port {port}: cannot listen there ({e.strerror})") from None
    finally:
        s.close()


@serve_app.callback()
@one_line_errors
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = 8080,
    data_dir: DataDir = Path("gpufleet-data"),
    db: Db = None,
    fleet: Annotated[Path | None, typer.Option(
        help="Fleet file (YAML, `gpufleet schema fleet`); default: the default scenario's fleet.")] = None,
    tenancy: Annotated[Path | None, typer.Option(
        help="Tenancy file (YAML with a tenancy: section, `gpufleet schema tenancy`).")] = None,
    speed: Annotated[float, typer.Option(
        help="Simulated seconds per wall second (virtual source).")] = 1.0,
    demo_load: Annotated[bool, typer.Option(
        "--demo-load", help="Keep a generated workload arriving (virtual source).")] = False,
    source: Annotated[str, typer.Option(
        help="Source of truth: virtual (a simulated fleet), slurm (a real Slurm: slurmrestd with "
             "--slurmrestd, else its client commands) or kubernetes (the API server).")] = "virtual",
    slurmrestd: Annotated[str | None, typer.Option(
        "--slurmrestd", help="slurmrestd URL (http://host:6820) for --source slurm; default: the "
                             "client commands (squeue, scontrol, sbatch).")] = None,
    slurm_conf: Annotated[str | None, typer.Option(
        "--slurm-conf", help="The slurm.conf the client commands read (default: $SLURM_CONF).")] = None,
    slurm_user: Annotated[str, typer.Option(
        "--slurm-user", help="The user slurmrestd's JWT names (the token: $SLURM_JWT, else minted "
                             "with `scontrol token`).")] = "root",
    kube_mode: Annotated[str, typer.Option(
        "--kube-mode", help="--source kubernetes: observer (explain and estimate) or scheduler "
                            "(binds gangs of pods with schedulerName gpufleet).")] = "observer",
    kubeconfig: Annotated[str | None, typer.Option(
        help="kubeconfig for --source kubernetes (default: in-cluster, then ~/.kube/config).")] = None,
    poll_s: Annotated[float, typer.Option(
        "--poll-s", help="Seconds between reads of a slurm or kubernetes source.")] = 3.0,
    policy: Annotated[str | None, typer.Option(
        help="Engine profile (default gang-easy; tenancy-easy with --tenancy; gang-conservative "
             "with --source kubernetes).")] = None,
    metrics_public: Annotated[bool, typer.Option(
        "--metrics-public", help="Serve /metrics without a token.")] = False,
) -> None:
    """Start the service (with no sub-command)."""
    if ctx.invoked_subcommand is not None:
        return
    if not math.isfinite(speed) or not 0 < speed <= 1e6:
        raise fail(f"--speed: expected a finite number in (0, 1e6], got {speed}")
    if not math.isfinite(poll_s) or not 0.1 <= poll_s <= 3600:
        raise fail(f"--poll-s: expected a number of seconds in [0.1, 3600], got {poll_s}")
    from gpufleet.model.fleet import Fleet
    from gpufleet.model.fleet_config import load_fleet
    from gpufleet.sim.scenario import bundled
    if source not in ("virtual", "slurm", "kubernetes"):
        raise fail(f"--source {source!r}: expected virtual, slurm or kubernetes")
    if kube_mode not in ("observer", "scheduler"):
        raise fail(f"--kube-mode {kube_mode!r}: expected observer or scheduler")
    _refuse_flags_of_other_sources(ctx, source)
    if slurmrestd is not None:
        rest = urlsplit(slurmrestd)
        if rest.scheme not in ("http", "https") or not rest.hostname:
            raise fail(f"--slurmrestd {slurmrestd!r}: expected a URL such as http://host:6820")
    # a real source brings its own nodes (slurm.conf and scontrol; the API server's Node objects)
    the_fleet = load_fleet(fleet) if fleet is not None else \
        bundled("default").fleet if source == "virtual" else Fleet((), name=source)
    ten = None
    if tenancy is not None:
        from gpufleet.cli.kueue import load_tenancy
        ten = load_tenancy(tenancy)[0].build()
    if policy is not None:
        from gpufleet.policies.registry import PROFILES
        if policy not in PROFILES:
            raise fail(f"--policy {policy!r}: expected one of {', '.join(PROFILES)}")
    _check_port(host, port)
    store = _store(data_dir, db)
    from gpufleet.service.config import ServiceConfig
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    cfg = ServiceConfig(fleet=the_fleet, tenancy=ten, data_dir=data_dir, db=db, source=source,
                        policy=policy, speed=speed, demo_load=demo_load, metrics_public=metrics_public,
                        slurm_rest=slurmrestd, slurm_conf=slurm_conf, slurm_user=slurm_user,
                        slurm_jwt=os.environ.get("SLURM_JWT") or None, kube_mode=kube_mode,
                        kubeconfig=kubeconfig, poll_s=poll_s, advertise_url=url)
    if source != "virtual":  # one process: submissions go to the source from the request's thread
        _run_one(cfg, store, host, port, url)
        return
    _run_split(cfg, store, host, port, url, the_fleet)


#: The flags that only one kind of source reads (the option's name, the sources it applies to).
SOURCE_FLAGS = {"speed": ("--speed", ("virtual",)), "demo_load": ("--demo-load", ("virtual",)),
                "slurmrestd": ("--slurmrestd", ("slurm",)), "slurm_conf": ("--slurm-conf", ("slurm",)),
                "slurm_user": ("--slurm-user", ("slurm",)), "kube_mode": ("--kube-mode", ("kubernetes",)),
                "kubeconfig": ("--kubeconfig", ("kubernetes",)),
                "poll_s": ("--poll-s", ("slurm", "kubernetes"))}


def _refuse_flags_of_other_sources(ctx: typer.Context, source: str) -> None:
    """A flag given on the command line that the chosen source never reads is refused, not
    ignored (``--kube-mode scheduler`` with the virtual fleet started a service that did not
    bind anything, without a word)."""
    for name, (flag, sources) in SOURCE_FLAGS.items():
        if source not in sources and getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE":
            raise fail(f"{flag}: applies to --source {' or '.join(sources)} only, not --source {source}")


def _run_one(cfg, store, host: str, port: int, url: str) -> None:  # noqa: ANN001
    import uvicorn

    from gpufleet.service.app import create_app
    from gpufleet.service.runtime import Service
    svc = Service(cfg, store)
    world = f"source {cfg.source}: {svc.source.health().detail}"
    sock = _listen(host, port)
    _announce(svc, store, url, world, svc.restored, svc.leading)
    uvicorn.Server(uvicorn.Config(create_app(cfg, svc), log_level="warning", access_log=False)).run(
        sockets=[sock])


def _run_split(cfg, store, host: str, port: int, url: str, the_fleet) -> None:  # noqa: ANN001
    """The front (this process: submissions, and every other request passed on) and the
    scheduler process (the loop and the live world): service/front.py says why."""
    import time
    from dataclasses import replace

    import uvicorn

    from gpufleet.service.front import Front, Server
    from gpufleet.service.runtime import Service
    from gpufleet.service.scheduler import Scheduler, SchedulerDied
    clock = store.get_meta("clock")
    cfg = replace(cfg, clock_epoch=float(clock) if clock is not None else 0.0, clock_anchor=time.time())
    scheduler = Scheduler(cfg, host)
    try:
        scheduler.start()
    except SchedulerDied as e:
        raise fail(f"gpufleet serve: the scheduler process did not start: {e}") from None
    try:
        front = Front(Service(replace(cfg, lead=False), store), lambda: scheduler.url)
        sock = _listen(host, port)
        _announce(front.svc, store, url, f"{len(the_fleet.nodes)} nodes, {the_fleet.total_gpus} GPUs",
                  scheduler.restored, scheduler.leading)
        Server(uvicorn.Config(front, log_level="warning", access_log=False, timeout_graceful_shutdown=5),
               front.close_streams).run(sockets=[sock])
    finally:
        scheduler.stop()
        store.close()
    print("gpufleet serve: stopped", file=sys.stderr, flush=True)


def _listen(host: str, port: int) -> socket.socket:
    """Bind and listen before the banner: a client that connects right after it is queued by the
    kernel until the server accepts, instead of refused (the banner came ~0.8 s early)."""
    fam, _, _, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(fam, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError as e:
        sock.close()
        raise fail(f"--host {host} --port {port}: cannot listen there ({e.strerror})") from None
    sock.listen(2048)
    return sock


def _announce(svc, store, url: str, world: str, restored: int, leading: bool) -> None:  # noqa: ANN001
    first = not store.tokens()
    console.print(f"gpufleet serve: {url}  (API {url}/api/v1, docs {url}/api/v1/docs); store {store.url}; "
                  f"{world}; "
                  f"{restored} job(s) restored" + ("" if leading else "; a follower (another "
                  "replica leads the scheduler)"),
                  highlight=False, soft_wrap=True)
    if first:
        token, _ = svc.auth.create("admin", name="first admin", detail="first start")
        console.print("first start: an admin token (shown once; `gpufleet serve token create` makes more):",
                      highlight=False, soft_wrap=True)
        print(token, flush=True)


@token_app.command("create")
@one_line_errors
def token_create(
    role: Annotated[str, typer.Option(help="viewer, member or admin.")],
    tenant: Annotated[str | None, typer.Option(help="The tenant a member token acts for.")] = None,
    name: Annotated[str, typer.Option(help="A name to recognise it by.")] = "",
    expires_h: Annotated[float | None, typer.Option(
        "--expires-h", help="Hours until it expires (default: never).")] = None,
    data_dir: DataDir = Path("gpufleet-data"),
    db: Db = None,
) -> None:
    """Create a token; the token alone is on the last line."""
    from gpufleet.service.auth import CLI, Auth
    if expires_h is not None and (not math.isfinite(expires_h) or expires_h <= 0):
        raise fail(f"--expires-h: expected a finite number of hours above 0, got {expires_h}")
    new = db is None and not (data_dir / DB_FILE).exists()
    store = _store(data_dir, db)
    token, rec = Auth(store).create(role, tenant, name, expires_h * 3600 if expires_h is not None else None,
                                    by=CLI, detail=_operator())
    of = f" of {rec.tenant}" if rec.tenant else ""
    where = f"a new store, {data_dir / DB_FILE} (gpufleet serve --data-dir {data_dir} reads it)" if new \
        else store.url
    err_console.print(f"token {rec.id}: {rec.role}{of}, in {where}", highlight=False, soft_wrap=True)
    print(token)


@token_app.command("list")
@one_line_errors
def token_list(data_dir: DataDir = Path("gpufleet-data"), db: Db = None) -> None:
    """List tokens (never their secrets): id, role, tenant, state, expiry (UTC), name. The
    column names go to stderr, so the rows on stdout stay one token a line for scripts."""
    import time
    now = time.time()
    err_console.print(f"{'ID':<16}  {'ROLE':<6}  {'TENANT':<16}  {'STATE':<7}  {'EXPIRES (UTC)':<16}  NAME",
                      highlight=False)
    for t in _store(data_dir, db, existing=True).tokens():
        state = ("revoked" if t.revoked_at is not None
                 else "expired" if t.expires_at is not None and t.expires_at <= now else "active")
        expires = (time.strftime("%Y-%m-%d %H:%M", time.gmtime(t.expires_at)) if t.expires_at is not None
                   else "never")
        print(f"{t.id}  {t.role:<6}  {t.tenant or '-':<16}  {state:<7}  {expires:<16}  {t.name}")


@token_app.command("revoke")
@one_line_errors
def token_revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (first column of `token list`).")],
    data_dir: DataDir = Path("gpufleet-data"),
    db: Db = None,
) -> None:
    """Revoke a token: every later call with it is refused."""
    from gpufleet.service.auth import CLI, Auth
    if not Auth(_store(data_dir, db, existing=True)).revoke(token_id, by=CLI, detail=_operator()):
        raise fail(f"{token_id}: no such active token")
    err_console.print(f"revoked {token_id}", highlight=False)


def _operator() -> str:
    """Who ran the command, for its audit row (the store may be shared by several machines)."""
    import getpass
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (a container's bare uid)
        user = f"uid {os.getuid()}"
    return f"command line, {user}@{socket.gethostname()}"
