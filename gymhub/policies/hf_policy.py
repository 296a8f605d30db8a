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
from gymhub.errors import PolicyError
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
    ) -> None:
        self.path = path
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
                self._tokenizer = AutoTokenizer.from_pretrained(self.path)
                self._model = AutoModelForCausalLM.from_pretrained(self.path)
                self._model = self._model.to(self.device)
            except (OSError, ValueError) as exc:
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

    def _generate(
        self, messages: list[Message], tools: list[dict[str, Any]], seed: int | None
    ) -> PolicyReply:
        return self.generate_from_ids(self.prompt_ids(messages, tools), seed)

    def generate_from_ids(self, prompt: list[int], seed: int | None) -> PolicyReply:
        """Sample a reply to the context ``prompt`` (token ids), with behaviour log-probs."""
        import torch

        model, tok = self._load()
        start = time.perf_counter()
        input_ids = torch.tensor([prompt], device=self.device)
        with self._lock, torch.no_grad():
            if seed is not None:
                torch.manual_seed(seed)
            out = model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                do_sample=True,
                temperature=self.temperature,
                top_p=self.top_p,
                top_k=self.top_k,
                max_new_tokens=self.max_new_tokens,
                return_dict_in_generate=True,
                output_scores=True,
                pad_token_id=tok.pad_token_id or tok.eos_token_id,
            )
        completion = out.sequences[0, len(prompt) :].tolist()
        logprobs = [
            float(torch.log_softmax(score[0].float(), dim=-1)[token])
            for score, token in zip(out.scores, completion, strict=True)
        ]
        text = tok.decode(completion, skip_special_tokens=True)
        return PolicyReply(
            message=Message(role="assistant", content=text),
            token_ids=tuple(completion),
            logprobs=tuple(logprobs),
            prompt_token_ids=tuple(prompt),
            timings={"generate_s": time.perf_counter() - start},
        )

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        return await asyncio.to_thread(self._generate, messages, tools, seed)

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
        reply = await asyncio.to_thread(self.policy.generate_from_ids, prompt, seed)
        self._last = list(reply.token_ids)
        self._context = prompt + self._last
        self._seen = len(messages)
        return reply

    async def aclose(self) -> None:
        pass
