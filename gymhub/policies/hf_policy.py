"""A local transformers model as a policy (CPU is fine): ``hf:/path/to/model``.

The chat is rendered with the model's chat template (tools included when the template takes
them), sampled with ``generate``, and the reply carries the sampled token ids and their
behaviour log-probs, computed from the processed scores at sampling time — the distribution
the tokens were actually drawn from (after temperature / top-k / top-p). Generation runs in a
worker thread, one at a time per model; with a seed it is reproducible.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

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

    @classmethod
    def from_spec(cls, argument: str, **options: Any) -> HFPolicy:
        if not argument:
            raise PolicyError("hf policy needs a model path, e.g. hf:./models/tiny")
        return cls(argument, **options)

    def for_episode(self, task: Task) -> HFPolicy:
        return self

    def _load(self) -> tuple[Any, Any]:
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

    def _generate(
        self, messages: list[Message], tools: list[dict[str, Any]], seed: int | None
    ) -> PolicyReply:
        import torch

        model, tok = self._load()
        start = time.perf_counter()
        prompt = self.prompt_ids(messages, tools)
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
