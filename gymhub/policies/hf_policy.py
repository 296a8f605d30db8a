"""A local transformers model as a policy (CPU is fine): ``hf:/path/to/model``.

The chat is rendered with the model's chat template (tools included when the template takes
them), sampled in a KV-cached decoding loop (concurrent episodes decode as one batch), and the
reply carries the sampled token ids and their behaviour log-probs, computed from the processed
scores at sampling time — the distribution the tokens were actually drawn from (after
temperature / top-k / top-p). Generation runs in a worker thread, one at a time per model;
with a seed it is reproducible, whatever else shares the batch.

Token in, token out: within an episode the policy never re-renders the chat. Its context is
the first prompt's ids, then each reply's sampled ids exactly as sampled, then the
environment's messages tokenised through the chat template and appended (see
:meth:`HFPolicy.continuation_ids`). So ``prompt_token_ids`` of turn k+1 always starts with
turn k's prompt and sampled ids, which is what lets the rollout engine build an exact
token-level record of the episode.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from gymhub._chat_template import env_turn_text
from gymhub._model_aliases import resolve_model
from gymhub.errors import GymhubError, PolicyError
from gymhub.policies.base import PolicyReply
from gymhub.types import Message, Task

_RENDER_CACHE_SIZE = 4096  # rendered chats a policy remembers


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
        self._batcher_: _Batcher | None = None
        self.max_episode_tokens = max_episode_tokens
        self._rendered: dict[str, tuple[int, ...]] = {}  # chat + tools -> prompt ids (see prompt_ids)
        self._render_lock = threading.Lock()  # renders run in worker threads
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
        """The token ids of the rendered chat, ending with the generation prompt.

        A group's G episodes start from the same chat: it is rendered once and the ids are
        remembered (the template is a pure function of the chat and the tools)."""
        _, tok = self._load()
        key = _render_key(messages, tools)
        cached = self._rendered.get(key)
        if cached is not None:
            return list(cached)
        chat = [m.to_openai() for m in messages]
        kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": True}
        if tools:
            kwargs["tools"] = tools
        ids = tok.apply_chat_template(chat, **kwargs)
        if hasattr(ids, "keys"):  # newer transformers return a BatchEncoding
            ids = ids["input_ids"]
        rendered = tuple(int(i) for i in ids)
        with self._render_lock:
            if len(self._rendered) >= _RENDER_CACHE_SIZE:
                self._rendered.pop(next(iter(self._rendered)))  # the oldest first
            self._rendered[key] = rendered
        return list(rendered)

    async def aprompt_ids(self, messages: list[Message], tools: list[dict[str, Any]]) -> list[int]:
        """:meth:`prompt_ids`: at once when this chat was rendered before, else in a worker thread."""
        cached = self._rendered.get(_render_key(messages, tools))
        if cached is not None:
            return list(cached)
        return await self.rendering(self.prompt_ids, messages, tools)

    def continuation_ids(
        self, sampled: list[int], env_messages: list[Message], tools: list[dict[str, Any]]
    ) -> list[int]:
        """The ids that follow the sampled reply ``sampled`` when the env answers with
        ``env_messages`` (see :func:`gymhub._chat_template.env_turn_text`)."""
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
        eos = set(_as_list(model.generation_config.eos_token_id)) | set(_as_list(tok.eos_token_id))
        rows = len(prompts)
        limits = limits or [self.max_new_tokens] * rows
        longest = max(limits)
        generators = [_seeded_generator(seed, self.device) for seed in seeds]  # one per row
        stops = torch.tensor(sorted(eos), dtype=torch.long, device=self.device)
        room = torch.tensor(limits, device=self.device)  # each row's token limit
        picks = torch.zeros((rows, longest), dtype=torch.long, device=self.device)
        picked_logprobs = torch.zeros((rows, longest), dtype=torch.float32, device=self.device)
        live = torch.ones(rows, dtype=torch.bool, device=self.device)
        steps = 0
        with self._lock, torch.inference_mode():
            logits, cache, attention, positions = self._prefill(model, prompts, pad)
            for step in range(longest):
                logp = self._sampling_logprobs(logits.float())
                picked = _draw(logp, generators)  # [rows]; a finished row's pick is ignored
                picks[:, step] = picked
                picked_logprobs[:, step] = logp.gather(-1, picked.unsqueeze(-1)).squeeze(-1)
                steps = step + 1
                live &= ~torch.isin(picked, stops) & (room > steps)
                if not bool(live.any()):  # the one host sync of a decoding step
                    break
                attention = torch.cat([attention, live.long().unsqueeze(-1)], -1)
                positions = positions[:, -1:] + 1
                out = model(
                    input_ids=torch.where(live, picked, pad).unsqueeze(-1),
                    attention_mask=attention,
                    position_ids=positions,
                    past_key_values=cache,
                    use_cache=True,
                )
                logits, cache = out.logits[:, -1], out.past_key_values
        all_ids, all_logprobs = picks[:, :steps].tolist(), picked_logprobs[:, :steps].tolist()
        tokens: list[list[int]] = []
        logprobs: list[list[float]] = []
        for r in range(rows):  # a reply ends at its first end-of-sequence token (kept) or its limit
            length = min(limits[r], steps)
            ends = [i + 1 for i, t in enumerate(all_ids[r][:length]) if t in eos]
            length = ends[0] if ends else length
            tokens.append(all_ids[r][:length])
            logprobs.append(all_logprobs[r][:length])
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

    def _prefill(self, model: Any, prompts: list[list[int]], pad: int) -> tuple[Any, Any, Any, Any]:
        """Each prompt's next-token logits [rows, V], the KV cache, the attention mask and the
        positions (left-padded to the longest prompt). Identical prompts (a group's G samples)
        are run once and their cache rows copied: a row's numbers are its prompt's either way."""
        import torch

        slots: dict[tuple[int, ...], int] = {}
        row_slot = [slots.setdefault(tuple(p), len(slots)) for p in prompts]
        width = max(len(p) for p in slots)
        ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in slots], device=self.device)
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in slots], device=self.device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        out = model(
            input_ids=ids, attention_mask=attention, position_ids=positions, use_cache=True, logits_to_keep=1
        )
        logits, cache = out.logits[:, -1], out.past_key_values
        if len(slots) < len(prompts):
            index = torch.tensor(row_slot, device=self.device)
            cache.reorder_cache(index)  # row r gets the keys and values of its prompt's slot
            logits, attention, positions = (t.index_select(0, index) for t in (logits, attention, positions))
        return logits, cache, attention, positions

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

        Requests are gathered into one :meth:`generate_batch` of at most ``max_batch`` rows:
        those that arrive while the event loop is busy, and those of episodes still rendering
        their prompt (:meth:`rendering`), so a step's episodes decode together rather than
        in two passes. Each row keeps its own seed, so batching never changes a reply.
        """
        limit = limit or self.max_new_tokens
        if self.max_batch <= 1:
            return (await asyncio.to_thread(self.generate_batch, [prompt], [seed], [limit]))[0]
        batcher = self._batcher()
        future: asyncio.Future[PolicyReply] = batcher.loop.create_future()
        batcher.pending.append((prompt, seed, limit, future))
        batcher.arrived.set()
        if batcher.flusher is None or batcher.flusher.done():
            batcher.flusher = batcher.loop.create_task(self._flush(batcher))
        return await future

    def _batcher(self) -> _Batcher:
        """The request queue of the running event loop (a new loop starts a new queue)."""
        loop = asyncio.get_running_loop()
        if self._batcher_ is None or self._batcher_.loop is not loop:
            self._batcher_ = _Batcher(loop)
        return self._batcher_

    async def rendering(self, render: Any, *args: Any) -> list[int]:
        """``render(*args)`` (a prompt's token ids) in a worker thread, counted while it runs,
        so the batcher waits for this request instead of decoding without it."""
        batcher = self._batcher()
        batcher.rendering += 1
        try:
            return list(await asyncio.to_thread(render, *args))
        finally:
            batcher.rendering -= 1
            batcher.arrived.set()

    async def _flush(self, batcher: _Batcher) -> None:
        for _ in range(3):  # let every ready worker enqueue first
            await asyncio.sleep(0)
        while batcher.pending:
            while batcher.rendering and len(batcher.pending) < self.max_batch:
                batcher.arrived.clear()  # an episode is rendering its prompt: wait for its request
                await batcher.arrived.wait()
            batch, batcher.pending = batcher.pending[: self.max_batch], batcher.pending[self.max_batch :]
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
        return await self.agenerate(await self.aprompt_ids(messages, tools), seed)

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

    def _continued(
        self, context: list[int], messages: list[Message], tools: list[dict[str, Any]], last: list[int]
    ) -> list[int]:
        """``context`` (which ends with the previous reply ``last``), then the env's reply as tokens."""
        new = messages[self._seen :]
        if not new or new[0].role != "assistant":
            raise PolicyError("an episode's chat must continue with this policy's own reply")
        return context + self.policy.continuation_ids(last, new[1:], tools)

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        if self._context is None:  # the first turn renders the chat
            prompt = await self.policy.aprompt_ids(messages, tools)
        else:
            prompt = await self.policy.rendering(self._continued, self._context, messages, tools, self._last)
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


class _Batcher:
    """One event loop's pending generation requests (see :meth:`HFPolicy.agenerate`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending: list[tuple[list[int], int | None, int, asyncio.Future[PolicyReply]]] = []
        self.rendering = 0  # episodes rendering a prompt in a worker thread: requests on their way
        self.arrived = asyncio.Event()  # a request came, or a render ended
        self.flusher: asyncio.Task[None] | None = None


def _render_key(messages: list[Message], tools: list[dict[str, Any]]) -> str:
    """What a rendered prompt depends on: the chat and the tools."""
    return json.dumps([[m.to_openai() for m in messages], tools], sort_keys=True)


def _seeded_generator(seed: int | None, device: Any) -> Any:
    """A random generator seeded with ``seed`` alone (unseeded: a fresh seed), so a row's
    samples never depend on the rows it is batched with."""
    import torch

    generator = torch.Generator(device=device)
    generator.manual_seed(seed if seed is not None else int(torch.randint(0, 2**62, ()).item()))
    return generator


def _draw(logp: Any, generators: list[Any]) -> Any:
    """One token per row from ``exp(logp)`` [rows, V], row r with ``generators[r]``.

    The exponential race: argmax(p / q) with q ~ Exp(1) drawn per token is a sample of p (a
    token of probability 0, cut by top-k / top-p, never wins). It is what
    ``torch.multinomial(p, 1, generator=g)`` computes, with the same draws from ``g``, so a
    row's tokens are those of ``multinomial`` row by row; here one division and one argmax
    serve the whole batch.
    """
    import torch

    probs = logp.exp()
    race = torch.empty_like(probs)
    for row, generator in zip(race, generators, strict=True):
        row.exponential_(1, generator=generator)
    return (probs / race).argmax(-1)


def _as_list(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, list | tuple) else [int(value)]
