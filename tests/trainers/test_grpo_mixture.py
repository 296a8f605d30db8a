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

DIGITS_ENV = "toy-digits-test-v0"


class DigitsVerifier(BaseVerifier):
    id = "digits-fraction"
    version = "1.0.0"

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        reply: str = final_state.get("reply") or ""
        digit = task.hidden["digit"]
        outcome = sum(ch == digit for ch in reply) / len(reply) if reply else 0.0
        return round(outcome, 9), {"bad_action_steps": final_state.get("bad_action_steps", [])}


class DigitsEnv(SingleReplyEnv):
    """"say 7": toy-letters-v0's twin over digits, a second env as cheap as the first."""

    def load_tasks(self) -> list[Task]:
        tasks = []
        for digit in string.digits:
            for phrasing in ("say {d}", "Say {d}", "say {d}!", "say: {d}"):
                hidden = {"digit": digit, "phrasing": phrasing}
                task = Task.create(self.env_id, "train", phrasing.format(d=digit), hidden)
                tasks.append(task.model_copy(update={"split": content_split(hidden)}))
        return tasks

    def make_verifier(self) -> DigitsVerifier:
        return DigitsVerifier(self.rules)


@pytest.fixture
def digits_env() -> Iterator[str]:
    register(
        DIGITS_ENV,
        f"{__name__}:DigitsEnv",
        kwargs={"max_turns": 1},
        reward={"beta": 0.1},
        rules={"empty-reply": 1.0, "invalid-action": 1.0},
    )
    yield DIGITS_ENV
    unregister(DIGITS_ENV)


def _mixture(env: Any, seed: int = 0) -> EnvMixture:
    return EnvMixture(env, split="train", seed=seed, env_kwargs={}, reward_overrides={"beta": 0.3})


def test_tasks_are_drawn_by_weight_and_a_plain_id_still_works() -> None:
    mixture = _mixture({"toy-letters-v0": 3, "toy-json-v0": 1})
    assert env_weights({"toy-letters-v0": 3, "toy-json-v0": 1}) == {"toy-letters-v0": 0.75, "toy-json-v0": 0.25}
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


def test_a_tiny_model_learns_a_mixture_of_two_envs(tmp_path: Path, digits_env: str) -> None:
    from tiny_model import PLAIN_TEMPLATE, build_tiny_model

    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    model = build_tiny_model(
        tmp_path / "m", seed=0, hidden=64, layers=2, heads=4, chars=True, template=PLAIN_TEMPLATE
    )
    cfg = GRPOConfig(
        env={"toy-letters-v0": 0.5, digits_env: 0.5},
        model=str(model),
        steps=100,
        tasks_per_step=12,
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
    for env_id in ("toy-letters-v0", digits_env):
        key = f"env/{env_id}/outcome_mean"
        first = [r[key] for r in history[:10] if key in r]
        last = [r[key] for r in history[-10:] if key in r]
        assert sum(first) / len(first) < 0.2, (env_id, first)
        assert sum(last) / len(last) > 0.7, (env_id, last)
