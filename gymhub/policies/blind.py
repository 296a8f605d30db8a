"""Blind policies: they never work the task, so every env must score them (about) 0.

``blind:<kind>`` plays one of :data:`BLIND_KINDS`:

* ``empty`` — an empty reply, every turn;
* ``finish`` — the finishing tool (``submit``, ``finish``, ``answer``, ...) at once, its
  arguments empty; ``done`` as text when the env has no tools;
* ``frequent`` — the most frequent gold answer of the task's type (metadata ``kind`` or
  ``template``) among the *other* train tasks: the final message of their reference scripts
  when it carries the answer, else the whole script. It reads the current task's hidden part
  only to leave the task itself out of the count;
* ``echo`` — the prompt back, as text and as every string argument of the finishing tool;
* ``claim`` — a claim of success, as text and as the finishing tool's arguments;
* ``random-tools`` — one random, schema-valid call of a random tool per turn (random text
  when there are none);
* ``lookups`` — each look-up tool once (``get_*``, ``find_*``, ``search``, ``open``,
  ``run_tests``, ...), its arguments taken from the prompt, then the finishing tool.

They share the :class:`~gymhub.policies.base.Policy` protocol and are deterministic: a reply
depends only on the policy's seed, the task id, the turn and the call's seed.
:func:`blind_floor` plays each on a sample of an env's tasks per split; ``check_env`` fails an
env whose best blind policy averages above :data:`BLIND_FLOOR` on a split.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gymhub._episodes import run_episode
from gymhub.env import Env, message_from_openai
from gymhub.errors import GymhubError, PolicyError
from gymhub.policies.base import PolicyReply
from gymhub.types import Message, Task, ToolCall, canonical_json

Split = Literal["train", "eval"]
BLIND_FLOOR = 0.05  # the most mean outcome a blind policy may reach on a split
BLIND_EPISODE_STEPS = 8  # replies per blind episode, the last stepped with env.finish (env turn
# limits of 15-20 would make the floor slow; a blind policy's later replies only repeat themselves)
FINISH_TOOL_NAMES = ("submit", "finish", "answer", "final_answer", "submit_answer", "done")
LOOKUP_WORDS = frozenset(
    {"get", "find", "list", "search", "read", "open", "lookup", "query", "view", "show", "check"}
    | {"verify", "fetch", "describe", "inspect", "tests"}
)
CLAIM = (
    "Done. I completed the task and verified it: all tests pass and the answer is correct. "
    "Task complete, success."
)
FILLER_WORDS = ("ok", "yes", "no", "none", "test", "data", "file", "value", "1", "0", "true", "result")


@dataclass(frozen=True)
class BlindTurn:
    """What a blind reply may look at: the chat, the tools, and where the episode is."""

    messages: list[Message]
    tools: list[dict[str, Any]]
    index: int  # 0 for the episode's first reply
    rng: random.Random
    task: Task | None
    answers: Callable[[Task], list[Message]]

    @property
    def prompt(self) -> str:
        return next((m.content for m in self.messages if m.role == "user"), "")

    @property
    def finish_tool(self) -> dict[str, Any] | None:
        by_name = {t["function"]["name"]: t for t in self.tools}
        return next((by_name[n] for n in FINISH_TOOL_NAMES if n in by_name), None)

    def call(self, tool: dict[str, Any], arguments: dict[str, Any], content: str = "") -> Message:
        name = tool["function"]["name"]
        call = ToolCall(id=f"call_{self.index}", name=name, arguments=canonical_json(arguments))
        return Message(role="assistant", content=content, tool_calls=(call,))

    def finish(self, text: str, content: str = "") -> Message:
        """The finishing tool with every string argument ``text`` (others empty), or text alone."""
        tool = self.finish_tool
        if tool is None:
            return Message(role="assistant", content=content or text)
        arguments = {k: (text if v.get("type") == "string" else _empty(v)) for k, v in _params(tool).items()}
        return self.call(tool, arguments, content)


def _params(tool: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict((tool["function"].get("parameters") or {}).get("properties") or {})


def _empty(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    defaults: dict[Any, Any] = {"integer": schema.get("minimum", 0), "number": schema.get("minimum", 0)}
    defaults |= {"boolean": False, "array": [], "object": {}, "string": ""}
    return defaults.get(kind, "")


def _random_value(schema: dict[str, Any], rng: random.Random, words: list[str]) -> Any:
    kind = schema.get("type")
    if kind in ("integer", "number"):
        low, high = int(schema.get("minimum", 0)), int(schema.get("maximum", 10_000))
        return rng.randint(low, high)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind in ("array", "object"):
        return [] if kind == "array" else {}
    return " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))


def _from_prompt(name: str, schema: dict[str, Any], prompt: str) -> Any:
    """A look-up argument read off the prompt by its name: an email for ``email``, the number
    after "order" for ``order_id``, the question for ``query``, a path for ``path``."""
    stem = name.lower().removesuffix("_id").removesuffix("id").strip("_")
    if schema.get("type") in ("integer", "number"):
        near = re.search(rf"{re.escape(stem)}\D{{0,12}}?(\d+)", prompt, re.IGNORECASE) if stem else None
        anywhere = re.search(r"\d+", prompt)
        value = int(near.group(1)) if near else int(anywhere.group(0)) if anywhere else 1
        low, high = schema.get("minimum", value), schema.get("maximum", value)
        return min(max(value, low), high)
    if schema.get("type") != "string":
        return _empty(schema)
    patterns = {
        "email": r"[\w.+-]+@[\w-]+\.[\w.-]+",
        "path": r"[\w.-]*/[\w./-]+|[\w-]+\.\w{1,4}\b",
        "file": r"[\w.-]*/[\w./-]+|[\w-]+\.\w{1,4}\b",
        "sku": r"\b[A-Z]+-\d+\b",
    }
    for key, pattern in patterns.items():
        if key in name.lower() and (found := re.search(pattern, prompt)):
            return found.group(0)
    if name.lower().endswith("id") and (found := re.search(r"\b[\w-]*\d[\w-]*\b", prompt)):
        return found.group(0)
    return prompt.strip().splitlines()[0] if prompt.strip() else ""


# ------------------------------------------------------------------ the kinds, one reply each
def _empty_reply(turn: BlindTurn) -> Message:
    return Message(role="assistant", content="")


def _finish_now(turn: BlindTurn) -> Message:
    return turn.finish("", content="" if turn.tools else "done")


def _echo(turn: BlindTurn) -> Message:
    return turn.finish(turn.prompt, content=turn.prompt)


def _claim(turn: BlindTurn) -> Message:
    return turn.finish(CLAIM, content=CLAIM)


def _random_tools(turn: BlindTurn) -> Message:
    words = [w for w in re.findall(r"[\w./@-]+", turn.prompt) if len(w) < 40] + list(FILLER_WORDS)
    if not turn.tools:
        return Message(role="assistant", content=" ".join(turn.rng.choice(words) for _ in range(8)))
    tool = turn.rng.choice(turn.tools)
    arguments = {k: _random_value(v, turn.rng, words) for k, v in sorted(_params(tool).items())}
    return turn.call(tool, arguments)


def _lookups(turn: BlindTurn) -> Message:
    finish = turn.finish_tool
    lookups = [
        t
        for t in turn.tools
        if t is not finish and LOOKUP_WORDS & set(t["function"]["name"].lower().split("_"))
    ]
    if turn.index >= len(lookups):
        return turn.finish("", content="" if turn.tools else "done")
    tool = lookups[turn.index]
    return turn.call(tool, {k: _from_prompt(k, v, turn.prompt) for k, v in sorted(_params(tool).items())})


def _frequent(turn: BlindTurn) -> Message:
    script = turn.answers(turn.task) if turn.task is not None else []
    if turn.index < len(script):
        return script[turn.index]
    return _finish_now(turn)


BLIND_KINDS: dict[str, Callable[[BlindTurn], Message]] = {
    "empty": _empty_reply,
    "finish": _finish_now,
    "frequent": _frequent,
    "echo": _echo,
    "claim": _claim,
    "random-tools": _random_tools,
    "lookups": _lookups,
}


# ------------------------------------------------------------------ most frequent gold answers
def task_type(task: Task) -> str:
    """The task's type for answer statistics: its metadata ``kind``, else ``template``, else ""."""
    return str(task.metadata.get("kind", task.metadata.get("template", "")))


def gold_answer(task: Task) -> tuple[dict[str, Any], ...]:
    """The answer part of a task's reference script: its last message when that message
    carries an answer (text or arguments), else the whole script (a bare ``finish`` after
    work is no answer on its own)."""
    script = list((task.hidden.get("solutions") or {}).get("reference") or [])
    if not script:
        return ()
    last = script[-1]
    calls = last.get("tool_calls") or []
    carries = bool(last.get("content")) or any(
        (c.get("function", c).get("arguments") or "{}") not in ("{}", "", {}) for c in calls
    )
    return (last,) if carries else tuple(script)


class AnswerStatistics:
    """Gold-answer counts per task type over an env's train tasks (what a policy that had
    memorised the training set would know)."""

    def __init__(self, tasks: Sequence[Task]) -> None:
        self._counts: dict[str, Counter[str]] = {}
        self._own: dict[str, str] = {}
        for task in tasks:
            answer = gold_answer(task)
            if task.split != "train" or not answer:
                continue
            key = canonical_json(list(answer))
            self._counts.setdefault(task_type(task), Counter())[key] += 1
            self._own[task.id] = key

    def most_frequent(self, task: Task) -> list[Message]:
        """The most frequent answer of ``task``'s type, ``task``'s own left out; ties go to the
        smallest canonical JSON, so the choice never depends on the task being played."""
        counts = Counter(self._counts.get(task_type(task), Counter()))
        own = self._own.get(task.id)
        if own is not None:
            counts[own] -= 1
        ranked = sorted((-n, key) for key, n in counts.items() if n > 0)
        return [message_from_openai(m) for m in json.loads(ranked[0][1])] if ranked else []


_STATISTICS: dict[tuple[str, int], AnswerStatistics] = {}


def _registry_statistics(task: Task) -> AnswerStatistics:
    """Statistics of ``task.env_id``'s train tasks, from the registry's default build."""
    key = (task.env_id, 0)
    if key not in _STATISTICS:
        from gymhub.registry import make

        env = make(task.env_id)
        try:
            _STATISTICS[key] = AnswerStatistics(env.all_tasks)
        finally:
            env.close()
    return _STATISTICS[key]


# ------------------------------------------------------------------ the policy
class BlindPolicy:
    """``blind:<kind>``: see the module docstring. ``train_tasks`` feeds ``frequent`` (by
    default the registered env's own tasks)."""

    def __init__(self, kind: str, *, seed: int = 0, train_tasks: Sequence[Task] | None = None) -> None:
        if kind not in BLIND_KINDS:
            raise PolicyError(f"unknown blind policy {kind!r}; use one of {', '.join(BLIND_KINDS)}")
        self.kind = kind
        self.seed = seed
        self.id = f"blind:{kind}"
        self._reply = BLIND_KINDS[kind]
        self._statistics = AnswerStatistics(train_tasks) if train_tasks is not None else None

    @classmethod
    def from_spec(cls, argument: str, **options: Any) -> BlindPolicy:
        if not argument:
            raise PolicyError(f"name a blind policy: blind:<kind>, one of {', '.join(BLIND_KINDS)}")
        return cls(argument, **options)

    def answers(self, task: Task) -> list[Message]:
        return (self._statistics or _registry_statistics(task)).most_frequent(task)

    def for_episode(self, task: Task) -> BlindEpisode:
        return BlindEpisode(self, task)

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        return BlindEpisode(self, None).reply(messages, tools, seed)

    async def aclose(self) -> None:
        pass


class BlindEpisode:
    """A blind policy bound to one task; the turn is read off the chat, so it keeps no state."""

    def __init__(self, policy: BlindPolicy, task: Task | None) -> None:
        self.policy = policy
        self.task = task
        self.id = policy.id

    def for_episode(self, task: Task) -> BlindEpisode:
        return BlindEpisode(self.policy, task)

    def reply(self, messages: list[Message], tools: list[dict[str, Any]], seed: int | None) -> PolicyReply:
        index = sum(m.role == "assistant" for m in messages)
        task_id = self.task.id if self.task is not None else ""
        rng = random.Random(f"{self.policy.seed}:{task_id}:{index}:{seed}")
        turn = BlindTurn(list(messages), list(tools), index, rng, self.task, self.policy.answers)
        return PolicyReply(message=self.policy._reply(turn))

    async def act(
        self, messages: list[Message], tools: list[dict[str, Any]], *, seed: int | None = None
    ) -> PolicyReply:
        return self.reply(messages, tools, seed)

    async def aclose(self) -> None:
        pass


# ------------------------------------------------------------------ the floor
class BlindScore(BaseModel):
    """One blind policy's mean outcome on a sample of one split."""

    model_config = ConfigDict(frozen=True)

    policy: str
    split: Split
    tasks: int
    mean_outcome: float


class BlindFloorReport(BaseModel):
    """Every blind policy's mean outcome per split of one env."""

    model_config = ConfigDict(frozen=True)

    env_id: str
    tasks_per_split: int
    scores: tuple[BlindScore, ...]
    seconds: float

    @property
    def best(self) -> BlindScore:
        return max(self.scores, key=lambda s: s.mean_outcome)

    def above(self, limit: float = BLIND_FLOOR) -> list[BlindScore]:
        return [s for s in self.scores if s.mean_outcome > limit]


def sample_tasks(tasks: Sequence[Task], per_split: int, seed: int = 0) -> dict[Split, list[Task]]:
    """Up to ``per_split`` tasks of each split, drawn by a seeded generator from id order."""
    chosen: dict[Split, list[Task]] = {}
    splits: tuple[Split, ...] = ("train", "eval")
    for split in splits:
        pool = sorted((t for t in tasks if t.split == split), key=lambda t: t.id)
        chosen[split] = random.Random(f"blind-floor:{seed}:{split}").sample(pool, min(per_split, len(pool)))
    return chosen


def blind_floor(
    env: Env, *, tasks_per_split: int = 20, seed: int = 0, kinds: Sequence[str] | None = None
) -> BlindFloorReport:
    """Play every blind policy on a seeded sample of ``env``'s tasks in each split (the env
    must list its tasks: ``env.all_tasks``), each episode at most :data:`BLIND_EPISODE_STEPS`
    replies long; their mean outcomes."""
    start = time.perf_counter()
    all_tasks = list(env.all_tasks)
    samples = sample_tasks(all_tasks, tasks_per_split, seed)
    scores = []
    for kind in kinds or list(BLIND_KINDS):
        policy = BlindPolicy(kind, seed=seed, train_tasks=all_tasks)
        for split, tasks in samples.items():
            if not tasks:
                continue
            outcomes = [_outcome(env, policy, t, seed) for t in tasks]
            scores.append(
                BlindScore(policy=policy.id, split=split, tasks=len(tasks), mean_outcome=_mean(outcomes))
            )
    return BlindFloorReport(
        env_id=env.env_id,
        tasks_per_split=tasks_per_split,
        scores=tuple(scores),
        seconds=round(time.perf_counter() - start, 3),
    )


def _outcome(env: Env, policy: BlindPolicy, task: Task, seed: int) -> float:
    """One blind episode through the one episode path, on the env's own event loop."""
    played = env.run_sync(
        run_episode(env, policy, task, 0, seed, "blind-floor", max_replies=BLIND_EPISODE_STEPS)
    )
    if played.verdict is None:
        raise GymhubError(f"{env.env_id}: {policy.id} on task {task.id}: {played.error}")
    return played.verdict.outcome


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 6) if values else 0.0


__all__ = [
    "BLIND_FLOOR",
    "BLIND_KINDS",
    "AnswerStatistics",
    "BlindFloorReport",
    "BlindPolicy",
    "BlindScore",
    "blind_floor",
    "gold_answer",
    "sample_tasks",
    "task_type",
]
