"""``gymhub serve``: environments as HTTP sessions (FastAPI), for trainers in other processes.

Create a session (= reset), step it, read its state, close it; verify a trajectory; list envs;
``/healthz`` and Prometheus ``/metrics``; the OpenAPI document at ``/openapi.json``. Binds to
loopback by default; any other bind needs a bearer token, and then every request without it
is refused (401 with ``WWW-Authenticate: Bearer``). Sessions expire after ``ttl_s`` idle
seconds (their env and sandbox are closed) and each client (its address) may hold at most
``max_sessions_per_client``, counted race-free. Bodies over ``MAX_BODY_BYTES`` are refused,
whether or not they declare a length. Nothing a client sends gets a 5xx: bad actions, kwargs,
task ids and bodies are 4xx with a message.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hmac
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from gymhub.env import Env
from gymhub.errors import EpisodeOver, GymhubError
from gymhub.registry import EnvSpec, list_envs, make, spec
from gymhub.types import (
    ServerHealth,
    SessionClosed,
    SessionStarted,
    SessionState,
    StepResult,
    Trajectory,
    Verdict,
)

MAX_BODY_BYTES = 16 * 1024 * 1024


class BodyLimit:
    """ASGI middleware: refuse a body over ``limit`` bytes, declared (Content-Length) or not
    (chunked); the body is read (at most ``limit`` bytes) before the app sees it."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _plain_error(send, 413, f"body over {self.limit} bytes")
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _plain_error(send, 413, f"body over {self.limit} bytes")
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())

        await self.app(scope, replay, send)


async def _plain_error(send: Any, status: int, detail: str) -> None:
    import json

    payload = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class ErrorBody(BaseModel):
    """Every error answer: what went wrong, in words."""

    detail: str


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the errors an operation can answer (401/413 come from any route)."""
    words = {
        400: "the request cannot be carried out (a body that is not JSON, bad task id or kwargs)",
        401: "missing or wrong bearer token",
        404: "no such env or session",
        409: "the episode is over",
        413: "request body too large",
        429: "too many sessions for this client",
    }
    return {code: {"model": ErrorBody, "description": words[code]} for code in (401, 413, *codes)}


class CreateSession(BaseModel):
    env_id: str
    seed: int | None = Field(None, ge=0, le=2**53)  # exact in every JSON parser
    task_id: str | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)


class StepRequest(BaseModel):
    action: str | dict[str, Any]


class VerifyRequest(BaseModel):
    trajectory: Trajectory


@dataclass
class Session:
    id: str
    env_id: str
    env: Env
    client: str
    last_used: float = field(default_factory=time.monotonic)
    steps: int = 0
    done: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def create_app(
    env_ids: list[str] | None = None,
    *,
    token: str | None = None,
    ttl_s: float = 600.0,
    max_sessions_per_client: int = 64,
    db: str | None = None,
    review: bool = False,
) -> FastAPI:
    """The app; ``db``: also serve that store's run reports at ``/runs`` (read-only unless
    ``review``, which accepts people's reviews of verdicts: :mod:`gymhub.report.pages`)."""
    allowed = set(env_ids or [s.id for s in list_envs()])
    sessions: dict[str, Session] = {}
    metrics: Counter[str] = Counter()

    async def reap_idle() -> None:
        while True:
            await asyncio.sleep(min(ttl_s, 5.0))
            now = time.monotonic()
            for sid, s in list(sessions.items()):
                if now - s.last_used > ttl_s and not s.lock.locked():
                    sessions.pop(sid, None)
                    metrics["sessions_expired_total"] += 1
                    await s.env.aclose()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(reap_idle())
        yield
        reaper.cancel()
        for s in list(sessions.values()):
            await s.env.aclose()
        sessions.clear()

    app = FastAPI(title="gymhub", version="0.1.0", lifespan=lifespan)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    opening: Counter[str] = Counter()  # sessions being created, per client: the cap counts them

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # Allow: every method of every route on this path, not one route's
            methods = {
                m
                for route in app.router.routes
                if isinstance(route, APIRoute) and route.matches(request.scope)[0] != Match.NONE
                for m in route.methods or ()
            }
            headers["Allow"] = ", ".join(sorted(methods))
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)

    @app.middleware("http")
    async def limits(request: Request, call_next: Any) -> Any:
        metrics["requests_total"] += 1
        if token is not None and request.url.path != "/healthz":
            scheme, _, credentials = request.headers.get("authorization", "").strip().partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                credentials.strip().encode(), token.encode()
            ):
                return JSONResponse(
                    {"detail": "missing or wrong bearer token"},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="gymhub"'},
                )
        return await call_next(request)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:  # a bug: say what, in one line
        return JSONResponse({"detail": f"internal error: {type(exc).__name__}: {exc}"[:500]}, status_code=500)

    def client_of(request: Request) -> str:
        """The client's address: a header the client chooses must not let it dodge the cap."""
        return request.client.host if request.client else "?"

    def session_of(sid: str) -> Session:
        found = sessions.get(sid)
        if found is None:
            raise HTTPException(
                404, f"no session {sid!r} (closed, expired after {ttl_s:g} s idle, or never made)"
            )
        return found

    @app.get("/healthz", responses=_errors())
    async def healthz() -> ServerHealth:
        return ServerHealth(sessions=len(sessions))

    @app.get("/envs", responses=_errors())
    async def envs() -> list[EnvSpec]:
        return [s for s in list_envs() if s.id in allowed]

    @app.get("/envs/{env_id}", responses=_errors(404))
    async def env_spec(env_id: str) -> EnvSpec:
        if env_id not in allowed:
            raise HTTPException(404, f"env {env_id!r} is not served here")
        return spec(env_id)

    @app.post("/sessions", responses=_errors(400, 404, 429))
    async def create(body: CreateSession, client: str = Depends(client_of)) -> SessionStarted:
        if body.env_id not in allowed:
            raise HTTPException(404, f"env {body.env_id!r} is not served here; see GET /envs")
        held = sum(1 for s in sessions.values() if s.client == client) + opening[client]
        if held >= max_sessions_per_client:  # no await between this check and the reservation
            raise HTTPException(
                429, f"at most {max_sessions_per_client} sessions per client: close some first"
            )
        if "sandbox" in body.kwargs:  # the isolation is the operator's choice, never a client's
            raise HTTPException(400, "kwargs may not choose the sandbox backend: the server's operator does")
        opening[client] += 1
        env: Env | None = None
        try:
            env = await asyncio.to_thread(make, body.env_id, **body.kwargs)
            options = {"task_id": body.task_id} if body.task_id else None
            observation, info = await env.areset(seed=body.seed, options=options)
            sid = uuid.uuid4().hex
            sessions[sid] = Session(sid, body.env_id, env, client)
        except (GymhubError, TypeError, ValueError, KeyError, AttributeError) as exc:
            if env is not None:
                await env.aclose()
            raise HTTPException(400, f"cannot start {body.env_id}: {exc}"[:1000]) from exc
        finally:
            opening[client] -= 1
        metrics["sessions_created_total"] += 1
        return SessionStarted(session_id=sid, observation=observation, info=info)

    @app.post("/sessions/{sid}/step", responses=_errors(400, 404, 409))
    async def step(sid: str, body: StepRequest) -> StepResult:
        s = session_of(sid)
        async with s.lock:
            if s.done:
                raise HTTPException(409, "the episode is over: create a new session")
            action: Any = body.action
            if isinstance(action, dict) and set(action) == {"bytes_b64"}:
                try:
                    action = base64.b64decode(str(action["bytes_b64"]), validate=True)
                except (binascii.Error, ValueError) as exc:
                    raise HTTPException(400, f"bytes_b64 is not base64: {exc}") from exc
            try:
                observation, reward, terminated, truncated, info = await s.env.astep(action)
            except EpisodeOver as exc:
                raise HTTPException(409, str(exc)) from exc
            except (GymhubError, TypeError, ValueError, KeyError, AttributeError) as exc:
                raise HTTPException(400, f"cannot step with that action: {exc}"[:1000]) from exc
            s.steps += 1
            s.done = terminated or truncated
            s.last_used = time.monotonic()
        metrics["steps_total"] += 1
        return StepResult(
            observation=observation, reward=reward, terminated=terminated, truncated=truncated, info=info
        )

    @app.get("/sessions/{sid}", responses=_errors(404))
    async def state(sid: str) -> SessionState:
        s = session_of(sid)
        idle_s = round(time.monotonic() - s.last_used, 3)
        return SessionState(session_id=sid, env_id=s.env_id, steps=s.steps, done=s.done, idle_s=idle_s)

    @app.delete("/sessions/{sid}", responses=_errors(404))
    async def close(sid: str) -> SessionClosed:
        s = sessions.pop(sid, None)
        if s is None:
            raise HTTPException(404, f"no session {sid!r}")
        await s.env.aclose()
        return SessionClosed(closed=sid)

    @app.post("/verify", responses=_errors(400, 404))
    async def verify(body: VerifyRequest) -> Verdict:
        from gymhub._reverify import replay

        t = body.trajectory
        if t.env_id not in allowed:
            raise HTTPException(404, f"env {t.env_id!r} is not served here")
        env = await asyncio.to_thread(make, t.env_id)
        try:
            verdict = await replay(env, t)
        except (GymhubError, TypeError, ValueError, KeyError, AttributeError) as exc:
            raise HTTPException(400, f"cannot replay the trajectory: {exc}"[:1000]) from exc
        finally:
            await env.aclose()
        if verdict is None:
            raise HTTPException(400, "the trajectory's actions do not end the episode")
        return verdict

    @app.get("/metrics", response_class=PlainTextResponse, responses=_errors())
    async def prometheus() -> str:
        lines = [f"gymhub_{name} {value}" for name, value in sorted(metrics.items())]
        lines.append(f"gymhub_sessions_open {len(sessions)}")
        return "\n".join(lines) + "\n"

    if db is not None:
        from gymhub.report.pages import add_report_routes

        add_report_routes(app, db, review=review)
    return app
