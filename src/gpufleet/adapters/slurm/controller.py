"""Is there a slurmctld to ask? A two-second answer before any Slurm command runs.

Slurm's own clients wait ``MessageTimeout`` (10 s by default, 20 s on the emulated cluster) per
attempt and retry before they say that the controller does not answer — ``gpufleet slurm
compare`` took 40 s to fail that way — and a controller name that does not resolve comes back as
Slurm's bare DNS error. Here: read ``SlurmctldHost`` (``name(addr)``, any of them, backups
included; ``ControlMachine``/``ControlAddr`` in older files) and ``SlurmctldPort`` (6817 by
default; the first of a range) from the slurm.conf the commands would use, resolve the host and
open one TCP connection to it with a short timeout. Failure is one line that says what was tried
and how to start a test cluster on this machine.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from gpufleet.adapters.slurm.conf import SlurmConf, read_slurm_conf

DEFAULT_CONF = "/etc/slurm/slurm.conf"
DEFAULT_PORT = 6817
START_HINT = ("for a test cluster on this machine: sudo tools/slurm-emulated-cluster.sh up, then "
              "export SLURM_CONF=/tmp/slurmtest/etc/slurm.conf")


class NoController(RuntimeError):
    """No slurmctld can be reached; the message is one line for the user."""


def conf_path(slurm_conf: str | None) -> Path:
    """The slurm.conf Slurm's clients would read: the one given, else $SLURM_CONF, else the default."""
    return Path(slurm_conf or os.environ.get("SLURM_CONF") or DEFAULT_CONF)


def controllers(conf: SlurmConf) -> list[tuple[str, int]]:
    """(address, port) of every controller slurm.conf names, primary first."""
    port_text = (conf.setting("SlurmctldPort") or str(DEFAULT_PORT)).split("-")[0].strip()
    port = int(port_text) if port_text.isdigit() else DEFAULT_PORT
    hosts: list[str] = []
    for key, value in conf.settings:
        if key.lower() == "slurmctldhost":
            m = re.fullmatch(r"\s*([^(\s]+)\s*(?:\(([^)]*)\))?\s*", value)
            if m:
                hosts.append(m.group(2) or m.group(1))
    if not hosts:
        machine = conf.setting("ControlAddr") or conf.setting("ControlMachine")
        if machine:
            hosts.append(machine)
    return [(h, port) for h in hosts]


def check_controller(slurm_conf: str | None, timeout_s: float = 2.0) -> None:
    """Return when some controller accepts a connection; else raise ``NoController``."""
    path = conf_path(slurm_conf)
    if not path.is_file():
        raise NoController(f"{path}: no slurm.conf there (pass --slurm-conf or set SLURM_CONF); {START_HINT}")
    targets = controllers(read_slurm_conf(path))
    if not targets:
        raise NoController(f"{path}: SlurmctldHost: expected the controller's host name, found none")
    tried = []
    for host, port in targets:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            tried.append(f"{host} does not resolve ({e.strerror})")
            continue
        for family, kind, proto, _, addr in infos:
            try:
                with socket.socket(family, kind, proto) as s:
                    s.settimeout(timeout_s)
                    s.connect(addr)
                return
            except OSError as e:
                tried.append(f"{host}:{port} {e.strerror or 'no answer'}")
                break
    raise NoController(f"{path}: no slurmctld answers ({'; '.join(tried)}); is it running? {START_HINT}")
