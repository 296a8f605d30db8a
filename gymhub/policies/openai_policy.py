"""gymhub's one client for OpenAI-compatible servers (a vLLM server, say), and a policy on it.

``openai:http://127.0.0.1:8000/v1#model-name``; without ``#model`` the first model listed by
``GET /models`` is used. :meth:`OpenAIPolicy.act` answers a chat through ``/chat/completions``:
tool calls come from the native field, or are parsed leniently from the text by the env. Token
log-probs are requested and kept when the server returns them; with ``request_token_ids=True``
the vLLM extension ``return_token_ids`` is asked for, so the sampled ids are recorded exactly as
sampled.

The same client serves the GRPO trainer's ``openai`` generation backend: token ids in and token
ids out through ``/completions`` (:meth:`OpenAIPolicy.complete_ids`), and vLLM's runtime LoRA
calls (:meth:`OpenAIPolicy.load_lora_adapter`, :meth:`OpenAIPolicy.unload_lora_adapter`).

Log-probs. A vLLM server returns by default the *raw* log-probs (the model's distribution
before temperature, top-k and top-p); the distribution the tokens were drawn from — what a
trainer needs as behaviour log-probs — comes only from a server started with
``--logprobs-mode processed_logprobs``. :meth:`OpenAIPolicy.check_processed_logprobs` tells the
two apart with two one-token requests.

Every request goes through one retry loop: HTTP 429/5xx, timeouts, transport errors and
malformed replies are retried with exponential backoff (``backoff · 2^attempt`` seconds); after
``max_retries`` a :class:`~gymhub.errors.PolicyError` says why. Other HTTP errors (a 400, a 404)
are a :class:`~gymhub.errors.PolicyError` at once, with the server's message.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from gymhub.env import message_from_openai
from gymhub.errors import PolicyError
from gymhub.policies.base import PolicyReply, TransientPolicyError
from gymhub.types import Message, Task

T = TypeVar("T")

PROCESSED_LOGPROBS_FLAG = "--logprobs-mode processed_logprobs"


@dataclass(frozen=True)
class SampledTokens:
    """One ``/completions`` sample: the ids as sampled, one log-prob per id, and, when asked
    for, the top log-probs at each position (token id -> log-prob)."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    text: str = ""
    top_logprobs: tuple[dict[int, float], ...] = ()


@dataclass
class _LoopClient:
    """The httpx client of one event loop, and how many requests it has in flight."""

    http: httpx.AsyncClient
    in_flight: int = 0
    close_when_idle: bool = False


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
        # one httpx client per event loop: each asyncio.run() gets its own connections
        self._clients: dict[asyncio.AbstractEventLoop, _LoopClient] = {}
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

    # ------------------------------------------------------------ chat (the policy)
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
        return await self._with_retries(lambda: self._chat_reply(body))

    async def _chat_reply(self, body: dict[str, Any]) -> PolicyReply:
        start = time.perf_counter()
        data = _json(await self._request("POST", "/chat/completions", body))
        try:
            choice = data["choices"][0]
            message = message_from_openai({**choice["message"], "role": "assistant"})
        except (KeyError, IndexError, TypeError) as exc:
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

    # ------------------------------------------------------------ token ids in, token ids out
    async def complete_ids(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        temperature: float | None = None,
        top_p: float = 1.0,
        top_k: int = 0,
        seed: int | None = None,
        top_logprobs: int = 0,
    ) -> SampledTokens:
        """Sample a continuation of ``prompt_ids`` through ``/completions`` (the prompt sent
        as ids, never as text) and return the sampled ids with their log-probs; with
        ``top_logprobs=k`` also the k most likely tokens at each position."""
        body: dict[str, Any] = {
            "model": await self._model_name(),
            "prompt": [int(t) for t in prompt_ids],
            "max_tokens": max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
            "top_p": top_p,
            "logprobs": top_logprobs,
            "return_tokens_as_token_ids": True,  # vLLM: tokens as "token_id:N", never re-tokenised
            **self.extra_body,
        }
        if top_k > 0:
            body["top_k"] = top_k
        if seed is not None:
            body["seed"] = seed % 2**63
        return await self._with_retries(lambda: self._sampled_tokens(body))

    async def _sampled_tokens(self, body: dict[str, Any]) -> SampledTokens:
        data = _json(await self._request("POST", "/completions", body))
        try:
            choice = data["choices"][0]
            lp = choice["logprobs"]
            ids = tuple(_token_id(t) for t in lp["tokens"])
            logprobs = tuple(float(x) for x in lp["token_logprobs"])
            tops = tuple(
                {_token_id(t): float(x) for t, x in (step or {}).items()}
                for step in lp.get("top_logprobs") or ()
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise TransientPolicyError(f"malformed completions reply: {exc!r}"[:300]) from exc
        if len(logprobs) != len(ids):
            raise TransientPolicyError(
                f"malformed completions reply: {len(ids)} tokens, {len(logprobs)} log-probs"
            )
        return SampledTokens(ids, logprobs, str(choice.get("text") or ""), tops if body["logprobs"] else ())

    async def check_processed_logprobs(self, prompt_ids: Sequence[int], temperature: float) -> bool | None:
        """Whether the server's log-probs are the processed ones (after temperature) — ``True``
        — or raw — a :class:`PolicyError` naming the flag that fixes it; ``None`` when this
        prompt cannot tell (temperature 1, or a next-token distribution too peaked).

        Raw log-probs do not depend on the temperature; processed ones do: the gap between two
        tokens' log-probs is divided by it. One token is sampled at ``temperature`` and one at
        1.0, with the top 5 log-probs, and the gaps compared.
        """
        if temperature <= 0 or abs(temperature - 1.0) < 1e-6:
            return None
        hot = await self.complete_ids(
            prompt_ids, max_tokens=1, temperature=temperature, seed=0, top_logprobs=5
        )
        plain = await self.complete_ids(prompt_ids, max_tokens=1, temperature=1.0, seed=0, top_logprobs=5)
        if not hot.top_logprobs or not plain.top_logprobs:
            raise PolicyError(f"{self.base_url}: the server returned no top log-probs")
        hot_top, plain_top = hot.top_logprobs[0], plain.top_logprobs[0]
        common = sorted(set(hot_top) & set(plain_top), key=lambda token: plain_top[token])
        if len(common) < 2:
            return None
        low, high = common[0], common[-1]
        gap_hot = hot_top[high] - hot_top[low]
        gap = plain_top[high] - plain_top[low]
        if gap * abs(1 / temperature - 1) < 1e-3:  # the two answers would be too close to tell
            return None
        if abs(gap_hot - gap / temperature) < abs(gap_hot - gap):
            return True
        raise PolicyError(
            f"{self.base_url} returns raw log-probs (those of temperature 1.0, not {temperature}), "
            "so the recorded behaviour log-probs would not be those of the distribution the tokens "
            f"were drawn from. Start the vLLM server with `{PROCESSED_LOGPROBS_FLAG}`."
        )

    # ------------------------------------------------------------ vLLM runtime LoRA
    async def load_lora_adapter(self, name: str, path: str) -> None:
        """Load the LoRA adapter saved in folder ``path`` into the server as model ``name``
        (a vLLM server with ``--enable-lora`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``)."""
        body = {"lora_name": name, "lora_path": path}
        await self._with_retries(lambda: self._request("POST", "/load_lora_adapter", body))

    async def unload_lora_adapter(self, name: str) -> None:
        body = {"lora_name": name}
        await self._with_retries(lambda: self._request("POST", "/unload_lora_adapter", body))

    # ------------------------------------------------------------ transport
    def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run one of this client's coroutines from synchronous code (no event loop running);
        the connections it opened are closed before it returns."""

        async def once() -> T:
            try:
                return await call()
            finally:
                await self.aclose()

        return asyncio.run(once())

    async def _model_name(self) -> str:
        if self.model is None:
            self.model = await self._with_retries(self._first_model)
            self.id = f"openai:{self.base_url}#{self.model}"
        return self.model

    async def _first_model(self) -> str:
        data = _json(await self._request("GET", "/models"))
        try:
            return str(data["data"][0]["id"])
        except (KeyError, IndexError, TypeError) as exc:
            raise TransientPolicyError(f"malformed /models reply: {exc!r}") from exc

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        """One HTTP request (``path`` under ``base_url``). Raises :class:`TransientPolicyError`
        for what is worth retrying, :class:`PolicyError` for other HTTP errors."""
        loop = asyncio.get_running_loop()
        client = self._loop_client(loop)
        client.in_flight += 1
        try:
            resp = await client.http.request(method, f"{self.base_url}{path}", json=body)
        finally:
            client.in_flight -= 1
            if client.close_when_idle and client.in_flight == 0:
                await self.aclose()
        _raise_for(resp)
        return resp

    def _loop_client(self, loop: asyncio.AbstractEventLoop) -> _LoopClient:
        for stale in [other for other in self._clients if other.is_closed()]:
            del self._clients[stale]  # a finished asyncio.run(); its sockets went with it
        if loop not in self._clients:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._clients[loop] = _LoopClient(httpx.AsyncClient(timeout=self.timeout, headers=headers))
        return self._clients[loop]

    async def _with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
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
        """Close this event loop's connections — once the requests in flight on them (other
        episodes sharing the client) have finished; a later request opens new ones."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            return
        if client.in_flight:
            client.close_when_idle = True
            return
        del self._clients[loop]
        await client.http.aclose()


def _json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError as exc:
        raise TransientPolicyError(
            f"malformed reply to {resp.request.method} {resp.request.url}: {resp.text[:200]!r}"
        ) from exc


def _token_id(token: str) -> int:
    """vLLM's ``return_tokens_as_token_ids`` spelling of a token: ``"token_id:123"``."""
    return int(str(token).removeprefix("token_id:"))


def _raise_for(resp: httpx.Response) -> None:
    if resp.status_code == 429 or resp.status_code >= 500:
        raise TransientPolicyError(f"HTTP {resp.status_code}: {resp.text[:200]}")
    if resp.status_code >= 400:
        raise PolicyError(
            f"HTTP {resp.status_code} from {resp.request.method} {resp.request.url}: {resp.text[:300]}"
        )
