from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gymhub.types import (
    Message,
    PathEvent,
    RewardConfig,
    Task,
    ToolCall,
    Trajectory,
    TrajectoryGroup,
    Turn,
    Verdict,
)

text = st.text(max_size=40)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(10**12), 10**12), finite, text)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=12,
)
tool_calls = st.builds(ToolCall, id=text, name=st.text(min_size=1, max_size=10), arguments=text)
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    content=text,
    tool_calls=st.lists(tool_calls, max_size=2).map(tuple),
    tool_call_id=st.none() | text,
    name=st.none() | text,
)


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    source = draw(st.sampled_from(["policy", "env"]))
    ids = tuple(draw(st.lists(st.integers(0, 200_000), max_size=8)))
    logprobs = draw(
        st.none()
        | st.just(
            tuple(
                draw(
                    st.lists(
                        st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
                        min_size=len(ids),
                        max_size=len(ids),
                    )
                )
            )
        )
    )
    mask = (1 if source == "policy" else 0,) * len(ids)
    return Turn(
        source=source,
        messages=tuple(draw(st.lists(messages, max_size=2))),
        token_ids=ids,
        logprobs=logprobs,
        loss_mask=mask,
        timings=draw(st.dictionaries(text, finite, max_size=2)),
    )


events = st.builds(
    lambda step, rule, penalty, v, ev: PathEvent(
        step=step,
        rule=rule,
        kind="penalty" if penalty else "progress",
        value=-abs(v) if penalty else abs(v),
        evidence=ev,
    ),
    st.integers(0, 100),
    text,
    st.booleans(),
    finite,
    text,
)
verdicts = st.builds(
    Verdict,
    outcome=st.floats(0, 1),
    path_events=st.lists(events, max_size=3).map(tuple),
    path_signal=finite,
    details=st.dictionaries(text, json_value, max_size=3),
    verifier=text,
    verifier_version=text,
    digest=text,
    error=st.none() | text,
)
trajectories = st.builds(
    Trajectory,
    id=text,
    task_id=text,
    env_id=text,
    sample_index=st.integers(0, 64),
    turns=st.lists(turns(), max_size=3).map(tuple),
    verdict=st.none() | verdicts,
    policy=text,
    seed=st.none() | st.integers(0, 2**62),
    status=st.sampled_from(["ok", "errored"]),
    error=st.none() | text,
)
tasks = st.builds(
    Task,
    id=text,
    env_id=text,
    split=st.sampled_from(["train", "eval"]),
    prompt=text,
    hidden=st.dictionaries(text, json_value, max_size=3),
    metadata=st.dictionaries(text, json_value, max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(st.one_of(tasks, messages, turns(), verdicts, trajectories))
def test_every_type_round_trips_through_json_exactly(value: object) -> None:
    cls = type(value)
    dumped = value.model_dump_json()  # type: ignore[attr-defined]
    back = cls.model_validate_json(dumped)  # type: ignore[attr-defined]
    assert back == value
    assert back.model_dump_json() == dumped


@settings(max_examples=50, deadline=None)
@given(st.lists(trajectories, min_size=1, max_size=3))
def test_groups_round_trip(trajs: list[Trajectory]) -> None:
    group = TrajectoryGroup.build(trajs, RewardConfig())
    assert TrajectoryGroup.model_validate_json(group.model_dump_json()) == group


def test_env_turns_have_mask_zero_and_policy_turns_mask_one() -> None:
    with pytest.raises(ValidationError):
        Turn(source="env", messages=(), token_ids=(1, 2), loss_mask=(1, 0))
    with pytest.raises(ValidationError):
        Turn(source="policy", messages=(), token_ids=(1, 2), loss_mask=(1, 0))
    with pytest.raises(ValidationError):
        Turn(source="policy", messages=(), token_ids=(1, 2), logprobs=(-0.1,), loss_mask=(1, 1))
    turn = Turn(source="policy", messages=(), token_ids=(5, 6), logprobs=(-0.5, -1.0), loss_mask=(1, 1))
    assert turn.logprobs == (-0.5, -1.0)


def test_path_event_signs_are_enforced() -> None:
    with pytest.raises(ValidationError):
        PathEvent(step=1, rule="r", kind="penalty", value=0.5)
    with pytest.raises(ValidationError):
        PathEvent(step=1, rule="r", kind="progress", value=-0.5)
    with pytest.raises(ValidationError):
        PathEvent(step=1, rule="r", kind="progress", value=math.inf)


def test_task_id_is_a_content_hash_and_public_drops_hidden() -> None:
    a = Task.create("env", "train", "prompt", {"gold": "secret answer 42"})
    b = Task.create("env", "train", "prompt", {"gold": "secret answer 42"})
    c = Task.create("env", "train", "prompt", {"gold": "another answer"})
    assert a.id == b.id != c.id
    assert "hidden" not in a.public()
    assert "secret answer" not in str(a.public())
    assert "secret answer" not in repr(a)


def _v(outcome: float, signal: float) -> Verdict:
    return Verdict(outcome=outcome, path_signal=signal, verifier="v", verifier_version="1")


def test_combine_zscore_by_hand() -> None:
    cfg = RewardConfig(beta=0.5, eps=0.0)
    rewards, adv = cfg.combine([_v(1.0, 0.0), _v(0.0, -1.0)])
    assert rewards == [1.0, -0.5]
    # O: mean .5, std .5 -> (+1, -1); Φ: mean -.5, std .5 -> (+1, -1); A = norm(O) + .5 norm(Φ)
    assert adv == pytest.approx([1.5, -1.5])


def test_combine_all_fail_group_is_carried_by_path_signal() -> None:
    cfg = RewardConfig(beta=0.1, eps=0.0)
    _, adv = cfg.combine([_v(0.0, 0.0), _v(0.0, -1.0), _v(0.0, 0.0), _v(0.0, -1.0)])
    assert adv == pytest.approx([0.1, -0.1, 0.1, -0.1])


def test_combine_constant_group_gives_exactly_zero() -> None:
    for mode in ("zscore", "rank", "none"):
        cfg = RewardConfig(normalization=mode)  # type: ignore[arg-type]
        _, adv = cfg.combine([_v(1.0, 0.5)] * 4)
        if mode != "none":
            assert adv == [0.0, 0.0, 0.0, 0.0]


def test_combine_rank_and_clip() -> None:
    cfg = RewardConfig(beta=0.0, normalization="rank")
    _, adv = cfg.combine([_v(0.2, 0), _v(0.9, 0), _v(0.5, 0)])
    assert adv == [-1.0, 1.0, 0.0]
    clipped = RewardConfig(beta=1.0, clip=0.5, eps=0.0)
    _, adv = clipped.combine([_v(1.0, 1.0), _v(0.0, 0.0)])
    assert adv == [0.5, -0.5]


def test_combine_all_pass_group_is_carried_by_path_signal() -> None:
    cfg = RewardConfig(beta=0.5, eps=0.0)
    # all outcomes 1; Φ = [0.5, 0, 0.5, 0] -> mean .25, std .25 -> norm Φ = [1, -1, 1, -1]
    rewards, adv = cfg.combine([_v(1.0, 0.5), _v(1.0, 0.0), _v(1.0, 0.5), _v(1.0, 0.0)])
    assert rewards == [1.25, 1.0, 1.25, 1.0]
    assert adv == pytest.approx([0.5, -0.5, 0.5, -0.5])


def test_combine_survives_extreme_values() -> None:
    _, adv = RewardConfig(beta=1.0).combine([_v(0.0, 1e300), _v(0.0, -1e300), _v(1.0, 0.0)])
    # Φ rescaled to [1, -1, 0]: z = [1.2247, -1.2247, 0]; O = [0, 0, 1]: z = [-0.7071, -0.7071, 1.4142]
    assert adv == pytest.approx([1.224745 - 0.707107, -1.224745 - 0.707107, 1.414214], abs=1e-5)
