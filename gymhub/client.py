"""``RemoteEnv``: a gymhub env served by ``gymhub serve``, behind the same Env contract.

    env = RemoteEnv("http://127.0.0.1:8000", "code-python-v0")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)   # info["verdict"] is a Verdict

Sync methods use an ``httpx.Client``; ``areset`` / ``astep`` / ``aclose`` an ``httpx.AsyncClient``
(``run_sync`` runs them on a private event loop, as :meth:`gymhub.Env.run_sync` does).
Every failure is a :class:`~gymhub.errors.GymhubError`: :class:`ServerUnreachable` (cannot
connect, timed out, connection dropped), :class:`RemoteError` (the server answered an error,
or something that is not gymhub's JSON), :class:`~gymhub.errors.EpisodeOver` (409).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from gymhub.env import TextSpace, run_on_own_loop
from gymhub.errors import BadAction, EpisodeOver, GymhubError
from gymhub.types import Message, SessionStarted, StepResult, Verdict

Answer = TypeVar("Answer", bound=BaseModel)


class ServerUnreachable(GymhubError, ConnectionError):
    """The env server could not be reached, or the connection failed mid-request."""


class RemoteError(GymhubError, RuntimeError):
    """The env server refused a request (4xx/5xx), or its answer is not gymhub's JSON."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def _send(base_url: str, call: Callable[[], httpx.Response]) -> httpx.Response:
    try:
        return call()
    except httpx.TransportError as exc:  # connect, read, write, timeout, protocol errors
        raise ServerUnreachable(f"gymhub server {base_url}: {type(exc).__name__}: {exc}") from exc


async def _asend(base_url: str, call: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
    try:
        return await call()
    except httpx.TransportError as exc:
        raise ServerUnreachable(f"gymhub server {base_url}: {type(exc).__name__}: {exc}") from exc


class RemoteEnv:
    def __init__(
        self,
        base_url: str,
        env_id: str,
        *,
        token: str | None = None,
        timeout: float = 120.0,
        **env_kwargs: Any,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.env_id = env_id
        self.env_kwargs = env_kwargs
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)
        self._ahttp: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._headers, self._timeout = headers, timeout
        self.session_id: str | None = None
        self.observation_space = TextSpace.of(100_000)
        self.action_space = TextSpace.of(1_000_000)

    def _session_body(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        """What ``POST /sessions`` takes (gymhub.server's ``CreateSession``)."""
        task_id = (options or {}).get("task_id")
        return {"env_id": self.env_id, "seed": seed, "task_id": task_id, "kwargs": self.env_kwargs}

    # ------------------------------------------------------------ sync
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self._drop_session()
        body = self._session_body(seed, options)
        started = _answer(
            _send(self.base_url, lambda: self._http.post("/sessions", json=body)), SessionStarted
        )
        self.session_id = started.session_id
        return started.observation, started.info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.session_id is None:
            raise EpisodeOver("step() before reset(): call reset() to start an episode")
        path, payload = f"/sessions/{self.session_id}/step", {"action": _wire(action)}
        return _step_result(_send(self.base_url, lambda: self._http.post(path, json=payload)))

    def close(self) -> None:
        self._drop_session()
        self._http.close()
        if self._loop is not None:  # the async client, if any, was opened on it
            if self._ahttp is not None:
                self._loop.run_until_complete(self._ahttp.aclose())
                self._ahttp = None
            self._loop.close()
            self._loop = None

    def run_sync(self, coro: Any) -> Any:
        """Run a coroutine of this env on its private event loop (one loop for its async client)."""
        return run_on_own_loop(self, coro)

    def _drop_session(self) -> None:
        if self.session_id is not None:
            sid, self.session_id = self.session_id, None
            _send(self.base_url, lambda: self._http.delete(f"/sessions/{sid}"))

    # ------------------------------------------------------------ async
    def _async(self) -> httpx.AsyncClient:
        if self._ahttp is None:
            self._ahttp = httpx.AsyncClient(
                base_url=self.base_url, headers=self._headers, timeout=self._timeout
            )
        return self._ahttp

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if self.session_id is not None:
            sid, self.session_id = self.session_id, None
            await _asend(self.base_url, lambda: self._async().delete(f"/sessions/{sid}"))
        body = self._session_body(seed, options)
        response = await _asend(self.base_url, lambda: self._async().post("/sessions", json=body))
        started = _answer(response, SessionStarted)
        self.session_id = started.session_id
        return started.observation, started.info

    async def astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.session_id is None:
            raise EpisodeOver("step() before reset(): call reset() to start an episode")
        path, payload = f"/sessions/{self.session_id}/step", {"action": _wire(action)}
        return _step_result(await _asend(self.base_url, lambda: self._async().post(path, json=payload)))

    async def aclose(self) -> None:
        if self.session_id is not None:
            sid, self.session_id = self.session_id, None
            await _asend(self.base_url, lambda: self._async().delete(f"/sessions/{sid}"))
        if self._ahttp is not None:
            await self._ahttp.aclose()
            self._ahttp = None


def _wire(action: Any) -> Any:
    """Actions travel as JSON: text, an OpenAI-format dict, or raw bytes as ``{"bytes_b64"}``
    (the env then judges them, e.g. non-UTF-8 gets an error observation)."""
    if isinstance(action, Message):
        return action.to_openai()
    if isinstance(action, (bytes, bytearray)):
        return {"bytes_b64": base64.b64encode(bytes(action)).decode()}
    try:
        json.dumps(action, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise BadAction(f"action cannot travel as JSON: {exc}") from None
    return action


def _checked(response: httpx.Response) -> Any:
    try:
        data = response.json()
    except (ValueError, UnicodeDecodeError):
        data = None
    if response.status_code >= 400:
        detail = data.get("detail") if isinstance(data, dict) else response.text[:500]
        if response.status_code == 409:
            raise EpisodeOver(str(detail))
        raise RemoteError(f"HTTP {response.status_code}: {detail}", response.status_code)
    if not isinstance(data, dict):
        raise RemoteError(
            f"HTTP {response.status_code} from {response.url}: not gymhub's JSON: {response.text[:200]!r}",
            response.status_code,
        )
    return data


def _answer(response: httpx.Response, model: type[Answer]) -> Answer:
    """The server's answer read through its model; a missing or mistyped field is a RemoteError."""
    data = _checked(response)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise RemoteError(
            f"the server's answer is not a {model.__name__} ({where}: {problem['msg']}): "
            f"{json.dumps(data)[:200]}"
        ) from None


def _step_result(response: httpx.Response) -> tuple[str, float, bool, bool, dict[str, Any]]:
    result = _answer(response, StepResult)
    info = dict(result.info)
    if isinstance(info.get("verdict"), dict):
        info["verdict"] = Verdict.model_validate(info["verdict"])
    return result.observation, result.reward, result.terminated, result.truncated, info
