"""Env mixtures: each step's tasks are drawn by weight, per-env metrics are logged, refills draw
fresh tasks, and a tiny model learns two envs at once."""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from gymhub.envs.toy.single_reply import SingleReplyEnv  # noqa: E402
from gymhub.registry import register, unregister  # noqa: E402
from gymhub.trainers.env_mixture import EnvMixture, env_weights  # noqa: E402
from gymhub.trainers.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from gymhub.types import Task, content_split  # noqa: E402
from gymhub.verifiers.base import BaseVerifier  # noqa: E402

STEPS = 100  # seeds 0 and 1: both envs pass 0.95 by steps 61-80


class SayCharVerifier(BaseVerifier):
    id = "say-char-fraction"
    version = "1.0.0"

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        reply: str = final_state.get("reply") or ""
        char = task.hidden["char"]
        outcome = sum(ch == char for ch in reply) / len(reply) if reply else 0.0
        return round(outcome, 9), {"bad_action_steps": final_state.get("bad_action_steps", [])}


class SayCharEnv(SingleReplyEnv):
    """ "say 7": toy-letters-v0's plainer twin over any alphabet (the char always ends the
    prompt, which a tiny model learns to copy in a few dozen steps)."""

    def __init__(self, alphabet: str = string.digits, **kwargs: Any) -> None:
        self.alphabet = alphabet
        super().__init__(**kwargs)

    def load_tasks(self) -> list[Task]:
        tasks = []
        for char in self.alphabet:
            for phrasing in ("say {c}", "Say {c}", "say: {c}", "write {c}"):
                hidden = {"char": char, "phrasing": phrasing}
                task = Task.create(self.env_id, "train", phrasing.format(c=char), hidden)
                tasks.append(task.model_copy(update={"split": content_split(hidden)}))
        return tasks

    def make_verifier(self) -> SayCharVerifier:
        return SayCharVerifier(self.rules)


@pytest.fixture
def say_char_envs() -> Iterator[list[str]]:
    """Two cheap envs: say a digit, say one of ten capital letters."""
    envs = {"toy-digits-test-v0": string.digits, "toy-capitals-test-v0": string.ascii_uppercase[:10]}
    for env_id, alphabet in envs.items():
        register(
            env_id,
            f"{__name__}:SayCharEnv",
            kwargs={"max_turns": 1, "alphabet": alphabet},
            reward={"beta": 0.1},
            rules={"empty-reply": 1.0, "invalid-action": 1.0},
        )
    yield list(envs)
    for env_id in envs:
        unregister(env_id)


def _mixture(env: Any, seed: int = 0) -> EnvMixture:
    return EnvMixture(env, split="train", seed=seed, env_kwargs={}, reward_overrides={"beta": 0.3})


def test_tasks_are_drawn_by_weight_and_a_plain_id_still_works() -> None:
    mixture = _mixture({"toy-letters-v0": 3, "toy-json-v0": 1})
    assert env_weights({"toy-letters-v0": 3, "toy-json-v0": 1}) == {
        "toy-letters-v0": 0.75,
        "toy-json-v0": 0.25,
    }
    drawn = mixture.draw(400)
    share = Counter(e for e, _ in drawn)["toy-letters-v0"] / len(drawn)
    assert 0.69 < share < 0.81, share  # 0.75 ± 2.8 standard deviations
    assert all(t.env_id == e for e, t in drawn)  # each env's tasks come from its own pool
    assert mixture.rewards["toy-json-v0"].beta == 0.3  # the run's reward override, per env
    # within an env, no task repeats before its pool is used up
    letters = [t.id for e, t in drawn if e == "toy-letters-v0"]
    pool = len(mixture.pools["toy-letters-v0"])
    assert len(set(letters[:pool])) == min(pool, len(letters))
    # resumable: the state reproduces the next draws
    state = mixture.state_dict()
    after = mixture.draw(10)
    again = _mixture({"toy-letters-v0": 3, "toy-json-v0": 1})
    again.load_state_dict(state)
    assert [t.id for _, t in again.draw(10)] == [t.id for _, t in after]
    plain = _mixture("toy-letters-v0")
    assert {e for e, _ in plain.draw(20)} == {"toy-letters-v0"}
    with pytest.raises(Exception, match="> 0"):
        env_weights({"toy-letters-v0": 0.0})


def test_refills_draw_fresh_tasks_not_the_next_steps(tmp_path: Path, tiny_model_path: Path) -> None:
    cfg = GRPOConfig(
        env="toy-letters-v0",
        model=str(tiny_model_path),
        tasks_per_step=2,
        group_size=2,
        max_new_tokens=2,
        dynamic_sampling=True,  # the untrained model's groups are all-zero: every draw refills
        max_refills=3,
        output_dir=str(tmp_path / "run"),
        console=False,
    )
    trainer = GRPOTrainer(cfg)
    draws: list[list[str]] = []
    original = trainer.mixture.draw

    def recording_draw(n: int) -> list[tuple[str, Task]]:
        out = original(n)
        draws.append([t.id for _, t in out])
        return out

    trainer.mixture.draw = recording_draw  # type: ignore[method-assign]
    first = trainer.train_step()
    first_step_draws = len(draws)
    trainer.train_step()
    assert first["dropped_groups"] > 0 and first_step_draws > 1  # refills happened
    ids = [i for d in draws for i in d]
    assert len(ids) <= len(trainer.mixture.pools["toy-letters-v0"])  # within one epoch...
    assert len(set(ids)) == len(ids)  # ...no task twice: refills and the next step all fresh


def test_a_mixture_logs_per_env_metrics(tmp_path: Path, tiny_model_path: Path) -> None:
    cfg = GRPOConfig(
        env={"toy-letters-v0": 0.5, "toy-json-v0": 0.5},
        model=str(tiny_model_path),
        tasks_per_step=6,
        group_size=2,
        max_new_tokens=3,
        output_dir=str(tmp_path / "run"),
        console=False,
        seed=1,
    )
    m = GRPOTrainer(cfg).train_step()
    envs = [e for e in ("toy-letters-v0", "toy-json-v0") if f"env/{e}/groups" in m]
    assert len(envs) == 2, sorted(m)  # seed 1 draws both envs
    assert sum(m[f"env/{e}/groups"] for e in envs) == 6
    for e in envs:
        for key in ("outcome_mean", "path_signal_mean", "reward_mean", "zero_variance_groups"):
            assert f"env/{e}/{key}" in m
    rules = [k for k in m if k.startswith("env/") and "/rule/" in k]
    assert all(0 <= m[k] <= 1 for k in rules)


def test_a_tiny_model_learns_a_mixture_of_two_envs(tmp_path: Path, say_char_envs: list[str]) -> None:
    from tiny_model import PLAIN_TEMPLATE, build_tiny_model

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    model = build_tiny_model(
        tmp_path / "m", seed=0, hidden=64, layers=2, heads=4, chars=True, template=PLAIN_TEMPLATE
    )
    digits, capitals = say_char_envs
    cfg = GRPOConfig(
        env={digits: 0.5, capitals: 0.5},
        model=str(model),
        steps=STEPS,
        tasks_per_step=8,
        group_size=16,
        max_new_tokens=1,
        lr=3e-3,
        concurrency=64,
        micro_batch=64,
        seed=0,
        output_dir=str(tmp_path / "run"),
        console=False,
    )
    history = GRPOTrainer(cfg).train()
    for env_id in say_char_envs:
        key = f"env/{env_id}/outcome_mean"
        first = [r[key] for r in history[:10] if key in r]
        last = [r[key] for r in history[-10:] if key in r]
        assert sum(first) / len(first) < 0.2, (env_id, first)
        assert sum(last) / len(last) > 0.8, (env_id, last)
