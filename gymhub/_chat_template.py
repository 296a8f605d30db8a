"""What a chat template puts between a sampled reply and the next one: the env's turn as text.

Token-in/token-out rollouts never re-render the chat; after each reply they append the
environment's messages exactly as the model's chat template would render them. This module
finds that text by rendering a probe chat with and without the env messages and taking the
difference — for any template that renders a chat as a sequence of turns.
"""

from __future__ import annotations

from typing import Any

from gymhub.errors import PolicyError
from gymhub.types import Message

_MARKER = "GYMHUB-SAMPLED-REPLY"


def env_turn_text(
    tokenizer: Any, produced: str, env_messages: list[Message], tools: list[dict[str, Any]] | None = None
) -> str:
    """The text after a reply whose decoded text (special tokens kept) is ``produced``.

    It is the template's end of an assistant turn (e.g. ``<|im_end|>\\n``) minus what the
    sampler already produced of it, then the env's messages and the next generation prompt.
    """
    probe = [{"role": "user", "content": "."}, {"role": "assistant", "content": _MARKER}]
    kwargs: dict[str, Any] = {"tokenize": False}
    if tools:
        kwargs["tools"] = tools
    before = tokenizer.apply_chat_template(probe, **kwargs)
    after = tokenizer.apply_chat_template(
        probe + [m.to_openai() for m in env_messages], add_generation_prompt=True, **kwargs
    )
    if not after.startswith(before) or _MARKER not in before:
        raise PolicyError("the chat template does not render env messages as a pure append")
    end_of_turn = before[before.index(_MARKER) + len(_MARKER) :]
    overlap = next(k for k in range(len(end_of_turn), -1, -1) if produced.endswith(end_of_turn[:k]))
    return end_of_turn[overlap:] + after[len(before) :]
