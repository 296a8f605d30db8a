"""A local transformers model as a policy (CPU is fine): ``hf:/path/to/model``.

The chat is rendered with the model's chat template (tools included when the template takes
them), sampled with ``generate``, and the reply carries the sampled token ids and their
behaviour log-probs, computed from the processed scores at sampling time — the distribution
the tokens were actually drawn from (after temperature / top-k / top-p). Generation runs in a
worker thread, one at a time per model; with a seed it is reproducible.

Token in, token out: within an episode the policy never re-renders the chat. Its context is
the first prompt's ids, then each reply's sampled ids exactly as sampled, then the
environment's messages tokenised through the chat template and appended (see
:meth:`HFPolicy.continuation_ids`). So ``prompt_token_ids`` of turn k+1 always starts with
turn k's prompt and sampled ids, which is what lets the rollout engine build an exact
token-level record of the episode.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from gymhub.chat_template import env_turn_text
from gymhub.errors import GymhubError, PolicyError
from gymhub.model_aliases import resolve_model
from gymhub.policies.base import PolicyReply
from gymhub.types import Message, Task


class HFPolicy:
    def __init__(
        self,
        path: str,
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        max_new_tokens: int = 256,
        device: str = "cpu",
        model: Any = None,
        tokenizer: Any = None,
        max_batch: int = 16,
        max_episode_tokens: int | None = None,
    ) -> None:
        self.path = path
        self.max_batch = max_batch
        self._batch_loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[tuple[list[int], int | None, int, asyncio.Future[PolicyReply]]] = []
        self.max_episode_tokens = max_episode_tokens
        self._flusher: asyncio.Task[None] | None = None
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.max_new_tokens = max_new_tokens
        self.device = device
        self.id = f"hf:{path}"
        self._model = model
        self._tokenizer = tokenizer
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()

    @classmethod
    def from_spec(cls, argument: str, **options: Any) -> HFPolicy:
        if not argument:
            raise PolicyError("hf policy needs a model path, e.g. hf:./models/tiny")
        return cls(argument, **options)

    def for_episode(self, task: Task) -> HFEpisode:
        return HFEpisode(self)

    @property
    def model(self) -> Any:
        return self._load()[0]

    @property
    def tokenizer(self) -> Any:
        return self._load()[1]

    def _load(self) -> tuple[Any, Any]:
        with self._load_lock:  # two episodes starting at once must not load the model twice
            return self._load_once()

    def _load_once(self) -> tuple[Any, Any]:
        if self._model is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            try:
                path = resolve_model(self.path)  # a folder, or an alias such as smollm2-135m
                self._tokenizer = AutoTokenizer.from_pretrained(path)
                self._model = AutoModelForCausalLM.from_pretrained(path)
                self._model = self._model.to(self.device)
            except (OSError, ValueError, GymhubError) as exc:
                raise PolicyError(f"cannot load a transformers model from {self.path!r}: {exc}") from exc
            self._model.eval()
        return self._model, self._tokenizer

    def prompt_ids(self, messages: list[Message], tools: list[dict[str, Any]]) -> list[int]:
        """The token ids of the rendered chat, ending with the generation prompt."""
        _, tok = self._load()
        chat = [m.to_openai() for m in messages]
        kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": True}
        if tools:
            kwargs["tools"] = tools
        ids = tok.apply_chat_template(chat, **kwargs)
        if hasattr(ids, "keys"):  # newer transformers return a BatchEncoding
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    def continuation_ids(
        self, sampled: list[int], env_messages: list[Message], tools: list[dict[str, Any]]
    ) -> list[int]:
        """The ids that follow the sampled reply ``sampled`` when the env answers with
        ``env_messages`` (see :func:`gymhub.chat_template.env_turn_text`)."""
        _, tok = self._load()
        produced = tok.decode(sampled, skip_special_tokens=False)
        text = env_turn_text(tok, produced, env_messages, tools)
        return [int(i) for i in tok(text, add_special_tokens=False)["input_ids"]]

    def generate_from_ids(self, prompt: list[int], seed: int | None) -> PolicyReply:
        """Sample a reply to the context ``prompt`` (token ids), with behaviour log-probs."""
        return self.generate_batch([prompt], [seed])[0]

    def generate_batch(
        self, prompts: list[list[int]], seeds: list[int | None], limits: list[int] | None = None
    ) -> list[PolicyReply]:
        """Sample one reply per prompt, decoding the rows together (left-padded, KV cache).

        Each row draws from its own random generator seeded with its own seed, so a reply
        does not depend on which other requests shared its batch. A reply ends at its first
        end-of-sequence token (kept) or at its limit (``max_new_tokens`` by default); its
        log-probs are those of the distribution the token was drawn from (temperature, top-k,
        top-p applied).
        """
        import torch

        model, tok = self._load()
        start = time.perf_counter()
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        eos = set(_as_list(model.generation_config.eos_token_id)) | {tok.eos_token_id}
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompts], device=self.device)
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        generators = [torch.Generator(device=self.device) for _ in prompts]
        for g, seed in zip(generators, seeds, strict=True):
            g.manual_seed(seed if seed is not None else int(torch.randint(0, 2**62, ()).item()))
        rows = len(prompts)
        limits = limits or [self.max_new_tokens] * rows
        tokens: list[list[int]] = [[] for _ in prompts]
        logprobs: list[list[float]] = [[] for _ in prompts]
        live = [True] * rows
        with self._lock, torch.no_grad():
            positions = (attention.cumsum(-1) - 1).clamp(min=0)
            out = model(input_ids=ids, attention_mask=attention, position_ids=positions, use_cache=True)
            for _ in range(max(limits)):
                logp = self._sampling_logprobs(out.logits[:, -1].float())
                picked = [
                    int(torch.multinomial(logp[r].exp(), 1, generator=generators[r])) for r in range(rows)
                ]
                for r in range(rows):
                    if live[r]:
                        tokens[r].append(picked[r])
                        logprobs[r].append(float(logp[r, picked[r]]))
                        live[r] = picked[r] not in eos and len(tokens[r]) < limits[r]
                if not any(live):
                    break
                step_ids = torch.tensor(
                    [[t if live[r] else pad] for r, t in enumerate(picked)], device=self.device
                )
                attention = torch.cat(
                    [attention, torch.tensor([[int(x)] for x in live], device=self.device)], -1
                )
                positions = positions[:, -1:] + 1
                out = model(
                    input_ids=step_ids,
                    attention_mask=attention,
                    position_ids=positions,
                    past_key_values=out.past_key_values,
                    use_cache=True,
                )
        elapsed = time.perf_counter() - start
        return [
            PolicyReply(
                message=Message(role="assistant", content=tok.decode(tokens[r], skip_special_tokens=True)),
                token_ids=tuple(tokens[r]),
                logprobs=tuple(logprobs[r]),
                prompt_token_ids=tuple(prompts[r]),
                timings={"generate_s": elapsed, "batch": float(rows)},
            )
            for r in range(rows)
        ]

    def _sampling_logprobs(self, logits: Any) -> Any:
        """log-probs of the distribution tokens are drawn from: temperature, then top-k, top-p."""
        import torch

        scores = logits / self.temperature
        if self.top_k and self.top_k < scores.shape[-1]:
            kth = torch.topk(scores, self.top_k, dim=-1).values[:, -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if self.top_p < 1.0:
            sorted_scores, order = torch.sort(scores, descending=True, dim=-1)
            cumulative = torch.softmax(sorted_scores, -1).cumsum(-1)
            drop = cumulative - torch.softmax(sorted_scores, -1) > self.top_p  # keep the first over top_p
            scores = scores.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), float("-inf"))
        return torch.log_softmax(scores, dim=-1)

    async def agenerate(self, prompt: list[int], seed: int | None, limit: int | None = None) -> PolicyReply:
        """Generate for one context; concurrent calls (one per rollout worker) are batched.

        Requests that arrive while the event loop is busy are gathered into one
        :meth:`generate_batch` of at most ``max_batch`` rows; each row keeps its own seed.
        """
        limit = limit or self.max_new_tokens
        if self.max_batch <= 1:
            return (await asyncio.to_thread(self.generate_batch, [prompt], [seed], [limit]))[0]
        loop = asyncio.get_running_loop()
        if self._batch_loop is not loop:
            self._batch_loop, self._pending, self._flusher = loop, [], None
        future: asyncio.Future[PolicyReply] = loop.create_future()
        self._pending.append((prompt, seed, limit, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = loop.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        for _ in range(3):  # let every ready worker enqueue first
            await asyncio.sleep(0)
        while self._pending:
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            try:
                replies = await asyncio.to_thread(
                    self.generate_batch, [b[0] for b in batch], [b[1] for b in batch], [b[2] for b in batch]
                )
            except Exception as exc:  # every waiting episode gets the failure, as its own
                for *_, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (*_, future), reply in zip(batch, replies, strict=True):
                if not future.done():
                    future.set_result(reply)

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        prompt = await asyncio.to_thread(self.prompt_ids, messages, tools)
        return await self.agenerate(prompt, seed)

    async def aclose(self) -> None:
        pass


class HFEpisode:
    """One episode of an :class:`HFPolicy`: keeps the token context between turns.

    The first turn renders the chat; every later turn appends the previous reply's sampled
    ids and the env messages' template tokens to the context, never re-rendering it.
    """

    def __init__(self, policy: HFPolicy) -> None:
        self.policy = policy
        self.id = policy.id
        self._context: list[int] | None = None
        self._seen = 0  # messages already in the context
        self._last: list[int] = []  # the previous reply's sampled ids
        self._start: int | None = None  # length of the first prompt

    def for_episode(self, task: Task) -> HFEpisode:
        return HFEpisode(self.policy)

    def _prompt(self, messages: list[Message], tools: list[dict[str, Any]], last: list[int]) -> list[int]:
        if self._context is None:
            return self.policy.prompt_ids(messages, tools)
        new = messages[self._seen :]
        if not new or new[0].role != "assistant":
            raise PolicyError("an episode's chat must continue with this policy's own reply")
        return self._context + self.policy.continuation_ids(last, new[1:], tools)

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        prompt = await asyncio.to_thread(self._prompt, messages, tools, self._last)
        if self._start is None:
            self._start = len(prompt)
        limit = self.policy.max_new_tokens
        if self.policy.max_episode_tokens is not None:  # the episode's token budget, env tokens included
            limit = max(1, min(limit, self.policy.max_episode_tokens - (len(prompt) - self._start)))
        reply = await self.policy.agenerate(prompt, seed, limit)
        self._last = list(reply.token_ids)
        self._context = prompt + self._last
        self._seen = len(messages)
        return reply

    async def aclose(self) -> None:
        pass


def _as_list(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, list | tuple) else [int(value)]
