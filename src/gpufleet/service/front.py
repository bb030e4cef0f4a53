"""The front process of ``gpufleet serve``: it takes the submissions itself and passes every other
request to the scheduler leader.

Why two processes (service/scheduler.py starts the other): a cycle over 100,000 pending jobs
holds the interpreter for hundreds of milliseconds, and a web server sharing that interpreter
answers behind it (782 submissions/s with p99 2.8 s on two cores, while the server's own CPU per
submission was 0.63 ms). Split, each gets its own GIL and core; the store is the only channel
between them (the change log, service/leader.py), so the split changes no guarantee: a 201 still
means "committed to disk", and the leader still applies each change once.

What the front answers itself: ``POST /api/v1/jobs``. Parsing, auth (argon2 once per token, then
its cache), the idempotency check and the durable group commit all run here; the commit nudges
the leader (service/wake.py), which starts the job within a cycle. It needs nothing of the live
world but the tenancy's queue names, which a quota edit does not change.

What it passes on: everything else, byte for byte (status, headers, cookies, streamed bodies such
as the dashboard's event stream), to the leader's scheduler process. The live-world questions
(explain, summary, what-if, the dashboard's pages) are answered there, from the snapshot the loop
publishes after each tick, instead of the leader publishing each cycle's answers to the front:
the snapshot holds 100,000 jobs and the node columns, and copying it to another process every
cycle (pickled, then rebuilt) would cost the leader more CPU than its cycle, while a proxied
explain moves 2 KB. The answers are therefore the leader's own, as fresh as its last tick, and
a follower replica's front passes them on the same way (no more 503 naming the leader).
``/healthz`` goes to this front's own scheduler process, not the leader: it says whether *this*
replica leads or follows.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Callable
from types import FrameType

import httpx
import uvicorn
from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from gpufleet.service.errors import ApiError, install_error_handlers, not_json
from gpufleet.service.errors import body as error_body
from gpufleet.service.routes import jobs
from gpufleet.service.routes.deps import api_router
from gpufleet.service.runtime import Service

#: Headers that describe one hop, not the message (RFC 9110 §7.6.1), and the length httpx sets
#: itself. ``Host`` goes on as the client sent it: the leader's redirects and links name the URL
#: the client knows, not the scheduler's loopback port.
HOP = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"transfer-encoding",
       b"upgrade", b"content-length"}
#: Headers the front's own server writes on every response: the leader's copies are dropped, or
#: a proxied answer carried two ``date`` and two ``server`` lines.
OWN = {b"date", b"server"}
#: How long the leader's address, read from the store, is trusted before it is read again.
LEADER_TTL_S = 1.0


class Front:
    """The ASGI application of the front: ``local`` for submissions, the leader for the rest."""

    def __init__(self, svc: Service, scheduler_url: Callable[[], str]) -> None:
        self.svc = svc
        self.scheduler_url = scheduler_url
        self.local = _local_app(svc)
        self._leader: tuple[float, str] | None = None
        self._client: httpx.AsyncClient | None = None
        self._closing: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def close_streams(self) -> None:
        """End every open stream now (called from the signal handler): uvicorn's graceful
        shutdown waits for open responses, and an event stream never ends by itself, so a stop
        with the dashboard open waited out the 5 s timeout and logged a CancelledError each."""
        if self._loop is not None and self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] != "http":
            return
        elif scope["method"] == "POST" and scope["path"] == "/api/v1/jobs":
            await self._submit(scope, receive, send)
        else:
            await self._proxy(scope, receive, send)

    async def _submit(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``POST /api/v1/jobs`` without FastAPI's routing, dependencies and body model: the
        usual request (a token in the cache, a JSON object declared as JSON, a short key) is
        parsed once and handed to ``submit_async``, which validates it with the same model; that
        cut the front's CPU per submission (bench/README.md). Any other request (a token to
        verify, a body that is not JSON or not declared as JSON, an over-long key) goes to the
        FastAPI route with its body, which answers it (401, 415, 422); an ApiError gets the same
        body either way."""
        chunks = []
        while True:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        raw = b"".join(chunks)
        headers = {k.lower(): v for k, v in scope["headers"]}
        key = headers.get(b"idempotency-key")
        who = self.svc.auth.cached(headers[b"authorization"].decode("latin-1")) \
            if b"authorization" in headers else None
        body: object = None
        ctype = headers.get(b"content-type")
        if who is not None and (key is None or len(key) <= 256) \
                and not_json(ctype.decode("latin-1") if ctype is not None else None, bool(raw)) is None:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        if not isinstance(body, dict):
            replay = [{"type": "http.request", "body": raw, "more_body": False}]
            await self.local(scope, lambda: _next(replay, receive), send)
            return
        try:
            rec, created = await self.svc.submit_async(who, body, key.decode("latin-1") if key else None)
        except ApiError as e:
            await JSONResponse(error_body(e.status, e.message, e.field), e.status,
                               headers=e.headers)(scope, receive, send)
            return
        await JSONResponse(jobs.job_out(self.svc, rec).model_dump(mode="json"), 201 if created else 200,
                           headers={"Location": f"/api/v1/jobs/{rec.id}"})(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                self._loop, self._closing = asyncio.get_running_loop(), asyncio.Event()
                self._client = httpx.AsyncClient(timeout=httpx.Timeout(120.0, connect=5.0),
                                                 limits=httpx.Limits(max_connections=256))
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def leader_url(self) -> str:
        """Where the leader's scheduler serves: announced in the store when it took the lead
        (read again every LEADER_TTL_S, and at once after it did not answer); this front's own
        scheduler until one has."""
        now = time.monotonic()
        if self._leader is None or now - self._leader[0] > LEADER_TTL_S:
            url = self.svc.store.get_meta("leader_url") or self.scheduler_url()
            self._leader = (now, url)
        return self._leader[1]

    async def _proxy(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._client is None:  # served without a lifespan (a test's bare ASGI call)
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(120.0, connect=5.0))
        request = Request(scope, receive)
        base = self.scheduler_url() if scope["path"] == "/healthz" else self.leader_url()
        query = scope.get("query_string", b"")
        url = base + scope.get("raw_path", scope["path"].encode()).decode("latin-1") \
            + ("?" + query.decode("latin-1") if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP]
        stream = any(k.lower() == b"accept" and b"text/event-stream" in v for k, v in scope["headers"]) \
            or scope["path"].endswith("/events")
        req = self._client.build_request(scope["method"], url, headers=headers, content=await request.body(),
                                         timeout=httpx.Timeout(None, connect=5.0) if stream else None)
        try:
            upstream = await self._client.send(req, stream=True)
        except httpx.HTTPError as e:
            self._leader = None
            who = "this replica's scheduler" if scope["path"] == "/healthz" else "the scheduler leader"
            await JSONResponse(error_body(503, f"{who} does not answer ({type(e).__name__}); "
                                          "submissions are still taken"), 503)(scope, receive, send)
            return
        try:
            await send({"type": "http.response.start", "status": upstream.status_code,
                        "headers": [(k, v) for k, v in upstream.headers.raw
                                    if (k.lower() not in HOP or k.lower() == b"content-length")
                                    and k.lower() not in OWN]})
            await _pump(upstream, receive, send, self._closing)
        finally:
            await upstream.aclose()


async def _next(replay: list[Message], receive: Receive) -> Message:
    """The buffered body once, then the client's own messages (its disconnect)."""
    return replay.pop() if replay else await receive()


async def _pump(upstream: httpx.Response, receive: Receive, send: Send,
                closing: asyncio.Event | None = None) -> None:
    """Pass the body on as it comes; stop (and close the leader's side) when the client goes,
    or end the body cleanly when the front shuts down."""
    async def body() -> None:
        async for chunk in upstream.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    tasks = [asyncio.ensure_future(body()), asyncio.ensure_future(gone())]
    if closing is not None:
        tasks.append(asyncio.ensure_future(closing.wait()))
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            if t is tasks[0]:
                t.result()  # the leader broke off mid-body: the client's connection ends too
        if tasks[0] not in done and closing is not None and closing.is_set():
            tasks[0].cancel()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        for t in tasks:
            t.cancel()


class Server(uvicorn.Server):
    """uvicorn's server, which on SIGTERM or SIGINT first ends the open streams
    (Front.close_streams) and does not raise the signal again once stopped, so that ``serve``
    stops its scheduler process in order and exits with one line."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True
        self.on_exit()


def _local_app(svc: Service) -> FastAPI:
    """The submission route (behind the API's dependencies) and the API's error bodies, nothing
    else (no docs: the leader's)."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.service = svc
    install_error_handlers(app)
    submit = APIRouter()
    submit.add_api_route("/jobs", jobs.submit, methods=["POST"], status_code=201)
    app.include_router(api_router(submit))
    return app
