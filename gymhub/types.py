"""The data contracts of gymhub: one pydantic model per concept, used everywhere.

These models are the wire format (HTTP server, CLI ``--json``), the file format (JSONL and
Parquet exports) and the store's source of truth. They are immutable and round-trip through
JSON exactly: ``Model.model_validate_json(m.model_dump_json()) == m``.

Messages follow the OpenAI chat format, the lingua franca of every policy backend.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Message",
    "PathEvent",
    "RewardConfig",
    "Task",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "TrajectoryGroup",
    "Turn",
    "Verdict",
    "canonical_json",
    "content_hash",
    "content_split",
    "state_fingerprint",
    "task_content_key",
]

JSON = Any  # a JSON-serialisable value


def canonical_json(value: Any) -> str:
    """Canonical JSON text: sorted keys, no whitespace, UTF-8, NaN refused.

    Everything that is hashed (task ids, verdict digests) goes through this function, so a hash
    never depends on dict order, float formatting differences or platform.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content_hash(value: Any, length: int = 16) -> str:
    """A short, stable hex hash of ``value``'s canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]


EVAL_SHARE = 5  # one task content in five is held out for eval


def task_content_key(hidden: dict[str, Any]) -> str:
    """The sha256 of a task's content: its hidden part without the ``solutions`` scripts.

    What the verifier holds (tests, gold answer, expected state) is the task; the scripts
    that play it differ with each env's interface (a code block, or write_file + submit), so
    they are left out. Two envs that share a task give it the same key.
    """
    return content_hash({k: v for k, v in hidden.items() if k != "solutions"}, length=64)


def content_split(hidden: dict[str, Any]) -> Literal["train", "eval"]:
    """The split of a task, a function of its content alone (:func:`task_content_key`).

    Never of the env id or the prompt: a task two envs share falls in the same split in
    both, so one env's eval set is never another env's training set. About one content in
    :data:`EVAL_SHARE` is held out for eval.
    """
    return "eval" if int(task_content_key(hidden), 16) % EVAL_SHARE == 0 else "train"


def state_fingerprint(state: Any) -> str:
    """A sha256 of a state's canonical JSON; bytes are hashed, pydantic models dumped."""

    def plain(value: Any) -> Any:
        if isinstance(value, bytes):
            return {"__bytes_sha256__": hashlib.sha256(value).hexdigest()}
        if isinstance(value, BaseModel):
            return plain(value.model_dump(mode="json"))
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return hashlib.sha256(canonical_json(plain(state)).encode("utf-8")).hexdigest()


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    """A call the model asked for. ``arguments`` is the raw JSON text, as in the OpenAI format."""

    id: str
    name: str
    arguments: str = "{}"
    type: Literal["function"] = "function"

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises ``ValueError`` if they are not a JSON object."""
        value = json.loads(self.arguments) if self.arguments.strip() else {}
        if not isinstance(value, dict):
            raise ValueError("tool-call arguments must be a JSON object")
        return value


class ToolResult(_Frozen):
    """What a tool returned, addressed to the call that asked for it."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False


class Message(_Frozen):
    """One chat message in OpenAI format."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The dict an OpenAI-compatible chat endpoint (or a chat template) expects."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


class Task(_Frozen):
    """One task of an environment.

    ``hidden`` is what only the verifier (and scripted reference policies) may see: hidden
    tests, gold answers, expected state, reference solutions. It is excluded from
    :meth:`public` and never placed in an observation or sent to a model policy.
    """

    id: str
    env_id: str
    split: Literal["train", "eval"]
    prompt: str
    hidden: dict[str, JSON] = Field(default_factory=dict, repr=False)
    metadata: dict[str, JSON] = Field(default_factory=dict)

    @classmethod
    def create(
        cls,
        env_id: str,
        split: Literal["train", "eval"],
        prompt: str,
        hidden: dict[str, Any],
        metadata: dict[str, Any] | None = None,
    ) -> Task:
        """Build a task whose id is a content hash of (env, prompt, hidden): stable everywhere."""
        task_id = content_hash({"env": env_id, "prompt": prompt, "hidden": hidden})
        return cls(
            id=task_id, env_id=env_id, split=split, prompt=prompt, hidden=hidden, metadata=metadata or {}
        )

    def public(self) -> dict[str, Any]:
        """The task without its hidden part: safe to show to a policy or a client."""
        return self.model_dump(exclude={"hidden"})


class Turn(_Frozen):
    """One turn of a trajectory, produced either by the policy or by the environment.

    A policy turn carries the token ids the policy sampled and, when the backend provides
    them, the behaviour log-probs recorded at sampling time (one per token). ``loss_mask`` is
    1 for policy tokens and 0 for environment tokens; an environment turn always has mask 0.
    """

    source: Literal["policy", "env"]
    messages: tuple[Message, ...]
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] | None = None
    prompt_token_ids: tuple[int, ...] | None = None
    loss_mask: tuple[int, ...] = ()
    timings: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_tokens(self) -> Turn:
        if self.loss_mask and len(self.loss_mask) != len(self.token_ids):
            raise ValueError("loss_mask must have one entry per token id")
        if self.logprobs is not None and len(self.logprobs) != len(self.token_ids):
            raise ValueError("logprobs must have one entry per token id")
        if self.source == "env" and any(self.loss_mask):
            raise ValueError("an environment turn must have loss mask 0 everywhere")
        if self.source == "policy" and self.loss_mask and not all(self.loss_mask):
            raise ValueError("a policy turn's sampled tokens all have loss mask 1")
        return self


class PathEvent(_Frozen):
    """One RLVP signal: a verifiable penalty or a reachable-progress credit at one step."""

    step: int
    rule: str
    kind: Literal["penalty", "progress"]
    value: float
    evidence: str = ""

    @model_validator(mode="after")
    def _check_sign(self) -> PathEvent:
        if not math.isfinite(self.value):
            raise ValueError("path event value must be finite")
        if self.kind == "penalty" and self.value > 0:
            raise ValueError("a penalty's value must be <= 0")
        if self.kind == "progress" and self.value < 0:
            raise ValueError("a progress credit's value must be >= 0")
        return self


class Verdict(_Frozen):
    """The verifier's judgement of one trajectory.

    ``outcome`` in [0, 1] is read from the final state; ``path_signal`` is the sum of the
    path events' values. ``digest`` hashes the verifier's inputs and result, so a repeat run
    that disagrees shows up in a determinism audit. An errored verdict has outcome 0 and no
    path credit, and says why in ``error``.
    """

    outcome: float = Field(ge=0.0, le=1.0)
    path_events: tuple[PathEvent, ...] = ()
    path_signal: float = 0.0
    details: dict[str, JSON] = Field(default_factory=dict)
    verifier: str
    verifier_version: str
    digest: str = ""
    error: str | None = None

    @property
    def errored(self) -> bool:
        return self.error is not None

    @classmethod
    def build(
        cls,
        *,
        verifier: str,
        verifier_version: str,
        outcome: float,
        path_events: list[PathEvent] | tuple[PathEvent, ...] = (),
        details: dict[str, Any] | None = None,
    ) -> Verdict:
        """A verdict whose path signal is the sum of its events (rounded to 1e-9)."""
        signal = round(sum(e.value for e in path_events), 9) + 0.0
        return cls(
            outcome=outcome,
            path_events=tuple(path_events),
            path_signal=signal,
            details=details or {},
            verifier=verifier,
            verifier_version=verifier_version,
        )

    def with_digest(self, task_id: str, state_fingerprint: Any, trajectory: Trajectory) -> Verdict:
        """Return a copy whose ``digest`` hashes the inputs and the result.

        Inputs: verifier id and version, task id, a fingerprint of the final state and the
        trajectory's actions. Timings never enter, so a repeat gives the same digest.
        """
        payload = {
            "verifier": self.verifier,
            "version": self.verifier_version,
            "task": task_id,
            "state": state_fingerprint,
            "actions": [m.model_dump(mode="json") for m in trajectory.actions()],
            "result": self.model_dump(mode="json", exclude={"digest"}),
        }
        digest = hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()
        return self.model_copy(update={"digest": digest})


class Trajectory(_Frozen):
    """One episode: the turns in order, the verdict, and what produced them."""

    id: str
    task_id: str
    env_id: str
    sample_index: int = 0
    turns: tuple[Turn, ...] = ()
    verdict: Verdict | None = None
    policy: str = ""
    seed: int | None = None
    env_version: str = ""
    verifier_version: str = ""
    status: Literal["ok", "errored"] = "ok"
    error: str | None = None
    truncated: bool = False
    timings: dict[str, float] = Field(default_factory=dict)

    def actions(self) -> list[Message]:
        """The policy's messages, in order: what a replay feeds back into the env."""
        return [m for t in self.turns if t.source == "policy" for m in t.messages]


def combined_reward(outcome: float, path_signal: float, beta: float) -> float:
    """``O + β·Φ``: the one place the two channels are added — raw for an episode's reward,
    group-normalised for its advantage (:meth:`RewardConfig.combine`)."""
    return outcome + beta * path_signal


class RewardConfig(_Frozen):
    """How a group's verdicts become rewards and advantages.

    For a group of G trajectories with outcomes O_i and path signals Φ_i::

        norm(x)_i = (x_i - mean(x)) / (std(x) + eps)     mode "zscore" (0 if std(x) == 0)
                  = x_i - mean(x)                          mode "mean" (Dr. GRPO: no division by std)
                  = centred rank of x_i in [-1, 1]         mode "rank"
                  = x_i                                    mode "none"
        R_i = O_i + β · Φ_i                                the reward (logged)
        A_i = clip(norm(O)_i + β · norm(Φ)_i, ±clip)       the GRPO advantage

    Normalising each channel separately lets Φ carry the learning signal in groups where all
    outcomes are equal (all-pass or all-fail) without drowning O where it varies. A group
    where both channels are constant gets advantages exactly 0.
    """

    beta: float = 0.1
    normalization: Literal["zscore", "mean", "rank", "none"] = "zscore"
    clip: float | None = None
    eps: float = 1e-6

    def combine(self, group: list[Verdict] | tuple[Verdict, ...]) -> tuple[list[float], list[float]]:
        """Return ``(rewards, advantages)``, one of each per verdict, in order."""
        outcomes = [v.outcome for v in group]
        signals = [v.path_signal for v in group]
        rewards = [combined_reward(o, p, self.beta) for o, p in zip(outcomes, signals, strict=True)]
        norm_o, norm_p = self._normalise(outcomes), self._normalise(signals)
        advantages = [combined_reward(o, p, self.beta) for o, p in zip(norm_o, norm_p, strict=True)]
        if self.clip is not None:
            advantages = [max(-self.clip, min(self.clip, a)) for a in advantages]
        return rewards, advantages

    def _normalise(self, xs: list[float]) -> list[float]:
        if not xs:
            return []
        if self.normalization == "none":
            return list(xs)
        if all(x == xs[0] for x in xs):
            return [0.0] * len(xs)
        if self.normalization == "mean":  # Dr. GRPO: dividing by std up-weights near-uniform groups
            mean = math.fsum(xs) / len(xs)
            return [x - mean for x in xs]
        if self.normalization == "zscore":
            # A z-score is scale-invariant: rescale huge values so squaring cannot overflow.
            scale = max(abs(x) for x in xs)
            if scale > 1e100:
                xs = [x / scale for x in xs]
            mean = math.fsum(xs) / len(xs)
            std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / len(xs))
            return [(x - mean) / (std + self.eps) for x in xs]
        # rank: average rank for ties, mapped linearly onto [-1, 1]
        order = sorted(range(len(xs)), key=lambda i: xs[i])
        ranks = [0.0] * len(xs)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
                j += 1
            for k in range(i, j + 1):
                ranks[order[k]] = (i + j) / 2
            i = j + 1
        top = len(xs) - 1
        return [2 * r / top - 1 for r in ranks]


class TrajectoryGroup(_Frozen):
    """The G trajectories sampled for one task, with their rewards and advantages."""

    task_id: str
    env_id: str
    trajectories: tuple[Trajectory, ...]
    rewards: tuple[float, ...] = ()
    advantages: tuple[float, ...] = ()

    @classmethod
    def build(cls, trajectories: list[Trajectory], reward: RewardConfig) -> TrajectoryGroup:
        ordered = sorted(trajectories, key=lambda t: t.sample_index)
        verdicts = [t.verdict or _ERRORED for t in ordered]
        rewards, advantages = reward.combine(verdicts)
        return cls(
            task_id=ordered[0].task_id,
            env_id=ordered[0].env_id,
            trajectories=tuple(ordered),
            rewards=tuple(rewards),
            advantages=tuple(advantages),
        )


_ERRORED = Verdict(outcome=0.0, verifier="none", verifier_version="0", error="no verdict")


# ----------------------------------------------------------------- HTTP session answers
# What ``gymhub serve`` answers (gymhub.server) and ``gymhub.client.RemoteEnv`` reads back.


class SessionStarted(_Frozen):
    """``POST /sessions``: the env was made and reset; ``observation`` is the task's prompt."""

    session_id: str
    observation: str
    info: dict[str, JSON]


class StepResult(_Frozen):
    """``POST /sessions/{id}/step``: Gymnasium's five values, by name. At the end of the episode
    ``info["verdict"]`` holds the :class:`Verdict`."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, JSON]


class SessionState(_Frozen):
    """``GET /sessions/{id}``: how far the session is, and how long it has been idle."""

    session_id: str
    env_id: str
    steps: int
    done: bool
    idle_s: float


class SessionClosed(_Frozen):
    """``DELETE /sessions/{id}``: the session's env and sandbox are closed."""

    closed: str


class ServerHealth(_Frozen):
    """``GET /healthz``."""

    status: Literal["ok"] = "ok"
    sessions: int
