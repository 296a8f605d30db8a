"""A policy behind any OpenAI-compatible chat-completions endpoint (a vLLM server, say).

``openai:http://127.0.0.1:8000/v1#model-name``; without ``#model`` the first model listed by
``GET /models`` is used. Tool calls come from the native field, or are parsed leniently from
the text by the env. Token log-probs are requested and kept when the server returns them;
with ``request_token_ids=True`` the vLLM extension ``return_token_ids`` is asked for, so the
sampled ids are recorded exactly as sampled.

HTTP 429/5xx, timeouts, transport errors and malformed replies are retried with exponential
backoff; after ``max_retries`` a :class:`~gymhub.errors.PolicyError` says why.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import httpx

from gymhub.env import message_from_openai
from gymhub.errors import PolicyError
from gymhub.policies.base import PolicyReply, TransientPolicyError
from gymhub.types import Message, Task


class OpenAIPolicy:
    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        temperature: float = 1.0,
        max_tokens: int = 1024,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        request_token_ids: bool = False,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.backoff = backoff
        self.request_token_ids = request_token_ids
        self.extra_body = extra_body or {}
        self.timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self.id = f"openai:{self.base_url}#{model or '?'}"

    @classmethod
    def from_spec(cls, argument: str, **options: Any) -> OpenAIPolicy:
        if not argument.startswith(("http://", "https://")):
            raise PolicyError(
                f"openai policy needs a URL, e.g. openai:http://127.0.0.1:8000/v1, got {argument!r}"
            )
        url, _, model = argument.partition("#")
        return cls(url, model or None, **options)

    def for_episode(self, task: Task) -> OpenAIPolicy:
        return self

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.AsyncClient(timeout=self.timeout, headers=headers)
        return self._client

    async def _model_name(self) -> str:
        if self.model is None:
            data = await self._with_retries(self._get_models)
            self.model = str(data)
            self.id = f"openai:{self.base_url}#{self.model}"
        return self.model

    async def _get_models(self) -> str:
        resp = await self._http().get(f"{self.base_url}/models")
        _raise_for(resp)
        try:
            return str(resp.json()["data"][0]["id"])
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise TransientPolicyError(f"malformed /models reply: {exc}") from exc

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        body: dict[str, Any] = {
            "model": await self._model_name(),
            "messages": [m.to_openai() for m in messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "logprobs": True,
            **self.extra_body,
        }
        if tools:
            body["tools"] = tools
        if seed is not None:
            body["seed"] = seed
        if self.request_token_ids:
            body["return_token_ids"] = True
        return await self._with_retries(lambda: self._complete(body))

    async def _complete(self, body: dict[str, Any]) -> PolicyReply:
        start = time.perf_counter()
        resp = await self._http().post(f"{self.base_url}/chat/completions", json=body)
        _raise_for(resp)
        try:
            data = resp.json()
            choice = data["choices"][0]
            message = message_from_openai({**choice["message"], "role": "assistant"})
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise TransientPolicyError(f"malformed completion reply: {exc!r}"[:300]) from exc
        content = (choice.get("logprobs") or {}).get("content") or []
        logprobs = tuple(float(t["logprob"]) for t in content) if content else None
        token_ids = tuple(int(t) for t in choice.get("token_ids") or ())
        if logprobs is not None and token_ids and len(logprobs) != len(token_ids):
            logprobs = None  # cannot align them: better none than wrong ones
        prompt_ids = data.get("prompt_token_ids")
        return PolicyReply(
            message=message,
            token_ids=token_ids,
            logprobs=logprobs if token_ids else None,
            prompt_token_ids=tuple(prompt_ids) if prompt_ids else None,
            timings={"generate_s": time.perf_counter() - start},
        )

    async def _with_retries(self, call: Any) -> Any:
        last = "no attempt made"
        for attempt in range(self.max_retries + 1):
            try:
                return await call()
            except TransientPolicyError as exc:
                last = str(exc)
            except httpx.TimeoutException as exc:
                last = f"timeout: {type(exc).__name__}"
            except httpx.TransportError as exc:
                last = f"transport error: {type(exc).__name__}: {exc}"
            if attempt < self.max_retries:
                await asyncio.sleep(self.backoff * 2**attempt)
        raise PolicyError(
            f"{self.base_url}: gave up after {self.max_retries + 1} attempts; last error: {last}"
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _raise_for(resp: httpx.Response) -> None:
    if resp.status_code == 429 or resp.status_code >= 500:
        raise TransientPolicyError(f"HTTP {resp.status_code}: {resp.text[:200]}")
    if resp.status_code >= 400:
        raise PolicyError(f"HTTP {resp.status_code} from {resp.request.url}: {resp.text[:300]}")
