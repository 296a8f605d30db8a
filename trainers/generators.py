"""Generation backends for the GRPO trainer, behind one small interface.

A generator hands the rollout engine a token-in/token-out policy and receives the trainer's
weights after each optimiser step::

    policy()            -> a gymhub Policy whose replies carry token ids and log-probs
    sync(model, step)   -> the generator samples from ``model``'s weights from now on
    version             -> the trainer step whose weights the generator holds (for staleness)

``hf`` — transformers ``generate`` on the trainer's own model object (CPU or GPU): the weights
are shared, so ``sync`` only records the version; concurrent episodes are batched into one
``generate`` call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from gymhub.errors import GymhubError
from gymhub.policies.hf_policy import HFPolicy

if TYPE_CHECKING:
    from gymhub.policies.base import Policy
    from gymhub.trainers.grpo import GRPOConfig


class Generator(Protocol):
    version: int

    def policy(self) -> Policy: ...

    def sync(self, model: Any, step: int) -> None: ...


class HFGenerator:
    def __init__(self, cfg: GRPOConfig, model: Any, tokenizer: Any) -> None:
        self.version = 0
        self._policy = HFPolicy(
            "trainer",
            model=model,
            tokenizer=tokenizer,
            temperature=cfg.temperature,
            max_new_tokens=cfg.max_new_tokens,
            device=cfg.device,
            max_batch=max(1, cfg.concurrency),
        )

    def policy(self) -> HFPolicy:
        return self._policy

    def sync(self, model: Any, step: int) -> None:
        self.version = step  # same module object: the next generate already uses the new weights


def make_generator(cfg: GRPOConfig, model: Any, tokenizer: Any) -> Generator:
    if cfg.backend == "hf":
        return HFGenerator(cfg, model, tokenizer)
    raise GymhubError(f"unknown generation backend {cfg.backend!r}")
