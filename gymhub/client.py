"""``RemoteEnv``: a gymhub env served by ``gymhub serve``, behind the same Env contract.

    env = RemoteEnv("http://127.0.0.1:8000", "code-python-v0")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)   # info["verdict"] is a Verdict

Sync methods use an ``httpx.Client``; ``areset`` / ``astep`` / ``aclose`` an ``httpx.AsyncClient``.
"""

from __future__ import annotations

import base64
from typing import Any

import httpx

from gymhub.env import TextSpace
from gymhub.errors import EpisodeOver, GymhubError
from gymhub.types import Message, Verdict


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
        self._headers, self._timeout = headers, timeout
        self.session_id: str | None = None
        self.observation_space = TextSpace(100_000)
        self.action_space = TextSpace(1_000_000)

    # ------------------------------------------------------------ sync
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self._drop_session()
        body = {
            "env_id": self.env_id,
            "seed": seed,
            "task_id": (options or {}).get("task_id"),
            "kwargs": self.env_kwargs,
        }
        data = _checked(self._http.post("/sessions", json=body))
        self.session_id = data["session_id"]
        return data["observation"], data["info"]

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.session_id is None:
            raise EpisodeOver("step() before reset(): call reset() to start an episode")
        return _step_result(
            self._http.post(f"/sessions/{self.session_id}/step", json={"action": _wire(action)})
        )

    def close(self) -> None:
        self._drop_session()
        self._http.close()

    def _drop_session(self) -> None:
        if self.session_id is not None:
            self._http.delete(f"/sessions/{self.session_id}")
            self.session_id = None

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
            await self._async().delete(f"/sessions/{self.session_id}")
        body = {
            "env_id": self.env_id,
            "seed": seed,
            "task_id": (options or {}).get("task_id"),
            "kwargs": self.env_kwargs,
        }
        data = _checked(await self._async().post("/sessions", json=body))
        self.session_id = data["session_id"]
        return data["observation"], data["info"]

    async def astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.session_id is None:
            raise EpisodeOver("step() before reset(): call reset() to start an episode")
        return _step_result(
            await self._async().post(f"/sessions/{self.session_id}/step", json={"action": _wire(action)})
        )

    async def aclose(self) -> None:
        if self.session_id is not None:
            await self._async().delete(f"/sessions/{self.session_id}")
            self.session_id = None
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
    return action


def _checked(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        detail = (
            response.json().get("detail")
            if "json" in response.headers.get("content-type", "")
            else response.text
        )
        if response.status_code == 409:
            raise EpisodeOver(str(detail))
        raise GymhubError(f"HTTP {response.status_code}: {detail}")
    return response.json()


def _step_result(response: httpx.Response) -> tuple[str, float, bool, bool, dict[str, Any]]:
    data = _checked(response)
    info = data["info"]
    if isinstance(info.get("verdict"), dict):
        info["verdict"] = Verdict.model_validate(info["verdict"])
    return data["observation"], data["reward"], data["terminated"], data["truncated"], info
