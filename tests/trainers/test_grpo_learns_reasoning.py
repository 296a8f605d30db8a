"""GRPO on a reasoning-gym env, on CPU: a tiny random-initialised model goes from never
answering to answering rg base_conversion correctly; and the RG_MIX preset draws from its envs.

The env is rg-base_conversion-v0's dataset with an easy config passed through the registry
kwargs (values 2-9 between bases 10 and 11: the answer is the number itself, one of eight
digits), scored by the unchanged verifier: exactly one ``<answer>`` block, canonical exact
match. The tiny model's vocabulary is the digits 2-9 and the two answer tags (the prompt's other
characters are not in it), and its chat template leaves the answer-format line's tags out of
the prompt, so of "...for digits above 9. Now, convert the base-11 number 7 to base-10 ...
between <answer> and </answer> tags ..." it reads ``9 7``: the number is the prompt's last token,
as toy-letters' letter is in test_grpo_learns.py. From random weights it must learn the answer
format (the answer-format rule's path signal is the only signal while every outcome is 0), then
to copy the number from one token back.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gymhub.envs.reasoning.datasets import DATASETS, registry_spec  # noqa: E402
from gymhub.registry import register, unregister  # noqa: E402
from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer  # noqa: E402

EASY_ENV = "rg-base_conversion-easy-test-v0"
EASY_CONFIG = {"min_base": 10, "max_base": 11, "min_value": 2, "max_value": 9}
ANSWER_TAGS = ["<answer>", "</answer>"]
# The plain template without the answer tags: the question's number is the prompt's last token.
TEMPLATE_WITHOUT_ANSWER_TAGS = (
    "{% for m in messages %}"
    "{{ m['content'] | replace('<answer>', '') | replace('</answer>', '') }}"
    "{% endfor %}"
)
STEPS = 300
LR = 3e-3
# A KL pull toward the random start (near-uniform over the digits) keeps the digit from
# collapsing while only the format is rewarded; without it seed 0 said one digit for every task.
KL_COEF = 0.05


@pytest.fixture
def easy_rg_env() -> Iterator[str]:
    spec = registry_spec(DATASETS["base_conversion"])
    del spec["id"]
    entry_point = spec.pop("entry_point")
    spec["kwargs"] = {**spec["kwargs"], "config": EASY_CONFIG}
    register(EASY_ENV, entry_point, **spec)
    yield EASY_ENV
    unregister(EASY_ENV)


def _tiny_digit_model(path: Path) -> Path:
    """tests/tiny_model.py's model over the digits 2-9, plus the answer tags as two tokens."""
    from tiny_model import build_tiny_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    build_tiny_model(
        path,
        seed=0,
        hidden=64,
        layers=2,
        heads=4,
        chars=True,
        template=TEMPLATE_WITHOUT_ANSWER_TAGS,
        alphabet=string.digits[2:],
    )
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.add_tokens(ANSWER_TAGS)
    model = AutoModelForCausalLM.from_pretrained(path)
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _mean(rows: list[dict], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows)


def test_tiny_model_learns_an_easy_rg_dataset(tmp_path: Path, easy_rg_env: str) -> None:
    import gymhub

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    from transformers import AutoTokenizer

    env = gymhub.make(easy_rg_env)
    tasks = env.tasks
    env.close()
    answers = Counter(str(task.hidden["answer"]) for task in tasks)
    # eight answers, none frequent: always saying one digit would score at most 0.25
    assert set(answers) <= set("23456789") and max(answers.values()) / sum(answers.values()) <= 0.25
    model = _tiny_digit_model(tmp_path / "m")
    tokenizer = AutoTokenizer.from_pretrained(model)
    for task in tasks:  # what the model reads: "9" (of "digits above 9"), then the number
        ids = tokenizer.apply_chat_template([{"role": "user", "content": task.prompt}], tokenize=True)
        assert tokenizer.decode(ids) == "9" + str(task.hidden["answer"])
    cfg = GRPOConfig(
        env=easy_rg_env,
        model=str(model),
        steps=STEPS,
        tasks_per_step=16,
        group_size=16,
        max_new_tokens=3,  # <answer> digit </answer>
        lr=LR,
        kl_coef=KL_COEF,
        concurrency=64,
        micro_batch=64,
        seed=0,
        output_dir=str(tmp_path / "run"),
        console=False,
    )
    history = GRPOTrainer(cfg).train()
    first, last = _mean(history[:10], "outcome_mean"), _mean(history[-10:], "outcome_mean")
    curve = " ".join(f"{_mean(history[i : i + 20], 'outcome_mean'):.2f}" for i in range(0, len(history), 20))
    print(f"rg base_conversion (easy): outcome {first:.3f} -> {last:.3f}; per 20 steps: {curve}")
    # untrained: no answer in the format (0); one digit for every task would score ~0.14
    assert first <= 0.2, first
    # measured: 0.67-0.96 in four runs of seed 0 (rollouts are concurrent: not bit-reproducible),
    # 0.75 and 0.90 for seeds 1 and 2 of model and run
    assert last >= 0.5, last


def test_the_rg_mix_preset_draws_tasks_from_many_rg_envs() -> None:
    from gymhub.envs.reasoning.mixture import RG_MIX
    from gymhub.trainers.env_mixture import EnvMixture

    mixture = EnvMixture(
        GRPOConfig(env=RG_MIX).env, split="train", seed=0, env_kwargs={}, reward_overrides={}
    )
    drawn = mixture.draw(150)
    by_env = Counter(env_id for env_id, _ in drawn)
    assert set(by_env) == set(RG_MIX)  # all 15 envs, at equal weights: each ~10 of 150
    assert max(by_env.values()) <= 25
    for env_id, task in drawn:
        assert task.env_id == env_id and task.split == "train"
        assert task.metadata["dataset"] == env_id.removeprefix("rg-").removesuffix("-v0")
