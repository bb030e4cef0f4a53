"""What the live loop survives, and how it reports being alive.

The official client raises the API server's answers as ``ApiException`` (kube_api turns those
into ``ApiError``), but a refused connection, a DNS failure, a timeout or a TLS error reach the
caller as the transport's own exceptions: ``OSError`` and its children (``ConnectionRefusedError``,
``socket.gaierror``, ``TimeoutError``, ``ssl.SSLError``) and urllib3's ``HTTPError`` family
(``MaxRetryError``, ``ProtocolError``). Every one of them is transient for a scheduler: the cycle
is abandoned, the watches start again from a fresh list, and the next try waits
``min(cap, interval × 2^(failures − 1))`` (1, 2, 4 … × the interval, capped at 60 s): a dead API
server is not hammered, and a blip costs one interval.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.live.kube_api import ApiError

try:
    from urllib3.exceptions import HTTPError as _Urllib3Error
except ImportError:  # pragma: no cover - urllib3 comes with the kubernetes client
    _Urllib3Error = OSError

TRANSIENT: tuple[type[BaseException], ...] = (ApiError, OSError, _Urllib3Error)
BACKOFF_CAP_S = 60.0


def backoff_s(interval_s: float, failures: int, cap_s: float = BACKOFF_CAP_S) -> float:
    return min(cap_s, max(interval_s, 0.1) * 2 ** max(0, failures - 1))


@dataclass
class Health:
    """The loop's state as the health endpoint tells it: healthy once a cycle has completed and
    none has failed since."""

    consecutive_failures: int = 0
    failures: int = 0
    last_error: str = ""
    last_ok: float | None = None

    def ok(self, now: float) -> None:
        self.consecutive_failures, self.last_ok = 0, now

    def failed(self, error: BaseException) -> None:
        self.consecutive_failures += 1
        self.failures += 1
        first = (str(error).splitlines() or [""])[0][:200]
        self.last_error = f"{type(error).__name__}: {first}"

    @property
    def healthy(self) -> bool:
        return self.last_ok is not None and self.consecutive_failures == 0

    def as_dict(self) -> dict:
        return {"healthy": self.healthy, "consecutive_failures": self.consecutive_failures,
                "failures": self.failures, "last_error": self.last_error, "last_ok": self.last_ok}


def serve_health(health: Health, port: int, host: str = "0.0.0.0"):  # noqa: ANN201 - http.server type
    """``GET /healthz``: 200 with the health as JSON while healthy, 503 with the same JSON while
    not (before the first cycle, or after a failed one). A daemon thread; returns the server (its
    ``server_address`` has the port when ``port`` is 0)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path.split("?")[0] not in ("/healthz", "/livez", "/readyz"):
                self.send_error(404)
                return
            body = json.dumps(health.as_dict()).encode()
            self.send_response(200 if health.healthy else 503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass  # probes every few seconds would flood the log

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
