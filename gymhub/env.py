"""The environment contract. Every gymhub environment subclasses :class:`Env`.

An ``Env`` is a :class:`gymnasium.Env` whose observations and actions are text, plus an async
twin (``areset``, ``astep``, ``aclose``) that the rollout engine uses for concurrency. The sync
methods run the async ones on a private event loop, so one env instance is driven either
sync or async, not both at once.

The contract is stated once, in the docstrings of :meth:`Env.reset`, :meth:`Env.step` and
:meth:`Env.close` (the async twins keep it), and checked for every registered env by
:func:`gymhub.check_env`. In short: the same seed or task id gives the same task and initial
state, byte for byte; the hidden part of a task is never shown; reward is 0 until the episode
ends, when the verifier reads the final state and ``info["verdict"]`` carries the
:class:`~gymhub.types.Verdict`; a bad action is answered, never raised.

Subclasses implement :meth:`load_tasks`, :meth:`tools`, :meth:`start_episode`,
:meth:`on_action`, :meth:`final_state` and :meth:`make_verifier`.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import gymnasium
from gymnasium import spaces
from pydantic import ValidationError

from gymhub._tool_calls import parse_tool_calls, reject_duplicate_tool_call_ids
from gymhub.errors import BadAction, EpisodeOver, GymhubError, UnknownTask
from gymhub.types import (
    Message,
    RewardConfig,
    Task,
    ToolCall,
    Trajectory,
    Turn,
    Verdict,
    combined_reward,
    state_fingerprint,
)

Split = Literal["train", "eval"]


class TextSpace(spaces.Text):
    """Any UTF-8 string up to ``max_length`` characters (gymnasium's Text limits the charset)."""

    def __init__(self, max_length: int) -> None:
        super().__init__(max_length=max_length, min_length=0)

    @classmethod
    def of(cls, max_length: int) -> TextSpace:
        """A fresh space (its own random generator, made on first use): a copy of one built
        per length, since gymnasium's Text indexes its charset in every constructor, a cost
        every env instance of a rollout would pay."""
        prototype = _TEXT_SPACES.get(max_length)
        if prototype is None:
            prototype = _TEXT_SPACES.setdefault(max_length, cls(max_length))
        return copy.copy(prototype)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace({self.max_length})"


_TEXT_SPACES: dict[int, TextSpace] = {}  # max_length -> an unused space, never seeded


def run_on_own_loop(owner: Any, coro: Any) -> Any:
    """Run ``coro`` to completion on ``owner._loop``, the event loop an env (local or remote)
    keeps for its sync methods, made on first use."""
    if owner._loop is None:
        owner._loop = asyncio.new_event_loop()
    return owner._loop.run_until_complete(coro)


@runtime_checkable
class Verifier(Protocol):
    """Scores an episode: ``verify(task, final_state, trajectory) -> Verdict``, pure and
    deterministic (``gymhub.verifiers`` re-exports it, with ``BaseVerifier``).

    A verifier reads the final state (never what the agent claims), evaluates its RLVP rules
    over the trajectory's steps, and returns a :class:`~gymhub.types.Verdict` whose digest
    hashes its inputs and result. Run twice on the same inputs it returns byte-identical
    verdicts. ``id`` and ``version`` name it in every verdict.
    """

    id: str
    version: str

    def verify(self, task: Task, final_state: Any, trajectory: Trajectory) -> Verdict: ...


@dataclass
class EnvReply:
    """What a subclass answers to one valid action."""

    messages: list[Message]
    done: bool = False


@dataclass
class _Episode:
    task: Task
    turns: list[Turn] = field(default_factory=list)
    bad_actions: list[int] = field(default_factory=list)
    step_index: int = 0
    done: bool = False
    end_requested: bool = False


class Env(gymnasium.Env[str, Any]):
    """Base class of gymhub environments; see the module docstring for the contract."""

    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium declares it per instance
    family: ClassVar[str] = "generic"
    version: ClassVar[str] = "0.1.0"
    default_max_turns: ClassVar[int] = 1
    max_action_bytes: ClassVar[int] = 1_000_000
    max_observation_chars: ClassVar[int] = 100_000
    system_prompt: ClassVar[str | None] = None
    verify_timeout_s: ClassVar[float] = 300.0  # past this a verifier's verdict is "errored"

    def __init__(
        self,
        *,
        env_id: str | None = None,
        split: Split = "train",
        max_turns: int | None = None,
        reward: dict[str, Any] | RewardConfig | None = None,
        rules: dict[str, float] | None = None,
        task_seed: int = 0,
    ) -> None:
        self.env_id = env_id or type(self).__name__
        self.split: Split = split
        self.max_turns = max_turns or self.default_max_turns
        self.reward_config = reward if isinstance(reward, RewardConfig) else RewardConfig(**(reward or {}))
        self.rules = dict(rules or {})
        self.task_seed = task_seed
        self.observation_space = TextSpace.of(self.max_observation_chars)
        self.action_space = TextSpace.of(self.max_action_bytes)
        self.verifier = self.make_verifier()
        self._episode: _Episode | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ----------------------------------------------------------- subclass hooks
    def load_tasks(self) -> list[Task]:
        """Every task of this env, both splits. Called once per (class, env_id, task_seed)."""
        raise NotImplementedError

    def tools(self) -> list[dict[str, Any]]:
        """The tools offered to the model, in OpenAI tools JSON schema. Default: none."""
        return []

    async def start_episode(self, task: Task) -> None:
        """Bring the env's state to the task's pristine initial state."""

    async def on_action(self, message: Message) -> EnvReply:
        """Answer one valid action (tool calls already checked against :meth:`tools`)."""
        raise NotImplementedError

    async def answer_tool_calls(self, message: Message, call_tool: Any, nudge: str) -> EnvReply:
        """The usual ``on_action`` of a tool env: run each call with ``await call_tool(call)``
        (-> ``(content, finished)``), answer each with a tool message, and answer a message
        with no tool call with ``nudge``. The episode ends when a call says it finished."""
        if not message.tool_calls:
            return EnvReply([Message(role="user", content=nudge)])
        replies, done = [], False
        for call in message.tool_calls:
            if done:  # nothing after the call that ended the episode runs
                content = "error: not run, it came after the call that ended the episode"
            else:
                content, done = await call_tool(call)
            replies.append(Message(role="tool", tool_call_id=call.id, name=call.name, content=content))
        return EnvReply(replies, done=done)

    async def final_state(self) -> Any:
        """The state the verifier reads (files, rows, the submitted answer)."""
        raise NotImplementedError

    def make_verifier(self) -> Verifier:
        raise NotImplementedError

    async def end_episode(self) -> None:
        """Release per-episode resources; called after the verdict."""

    # ----------------------------------------------------------- task set
    @property
    def all_tasks(self) -> list[Task]:
        return list(_cached_tasks(self, type(self), self.env_id, self.task_seed))

    @property
    def tasks(self) -> list[Task]:
        """The tasks of this env's split."""
        return [t for t in self.all_tasks if t.split == self.split]

    def get_task(self, task_id: str) -> Task:
        for task in self.all_tasks:
            if task.id == task_id:
                return task
        raise UnknownTask(
            f"task {task_id!r} is not in {self.env_id}; list ids with `gymhub info {self.env_id}`"
        )

    # ----------------------------------------------------------- async API
    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """The async twin of :meth:`reset` (what the rollout engine awaits); same contract."""
        super().reset(seed=seed)
        options = options or {}
        if "task_id" in options:
            task = self.get_task(options["task_id"])
        else:
            pool = self.tasks
            if not pool:
                raise GymhubError(f"{self.env_id} has no tasks in split {self.split!r}")
            task = pool[int(self.np_random.integers(len(pool)))]
        if self._episode is not None and not self._episode.done:
            await self.end_episode()
        self._episode = _Episode(task=task)
        await self.start_episode(task)
        messages = self.initial_messages(task)
        self._episode.turns.append(Turn(source="env", messages=tuple(messages)))
        info = {
            "task_id": task.id,
            "env_id": self.env_id,
            "split": task.split,
            "tools": self.tools(),
            "messages": [m.to_openai() for m in messages],
        }
        return task.prompt, info

    def initial_messages(self, task: Task) -> list[Message]:
        """The chat a policy sees first: an optional system prompt and the task prompt."""
        head = [Message(role="system", content=self.system_prompt)] if self.system_prompt else []
        return [*head, Message(role="user", content=task.prompt)]

    async def astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """The async twin of :meth:`step` (what the rollout engine awaits); same contract."""
        ep = self._episode
        if ep is None:
            raise EpisodeOver("step() before reset(): call reset() to start an episode")
        if ep.done:
            raise EpisodeOver("the episode is over: call reset() to start a new one")
        ep.step_index += 1
        recorded = False
        try:
            message = coerce_action(
                action, self.max_action_bytes, [t["function"]["name"] for t in self.tools()]
            )
            ep.turns.append(Turn(source="policy", messages=(message,)))
            recorded = True
            reject_duplicate_tool_call_ids(message.tool_calls)  # BadAction: nothing of it runs
            rejected = self._check_tool_calls(message)
            if rejected is not None:
                ep.bad_actions.append(ep.step_index)
            reply = rejected or await self.on_action(message)
        except BadAction as exc:  # from coerce_action, or raised by a subclass's on_action
            ep.bad_actions.append(ep.step_index)
            if not recorded:
                ep.turns.append(Turn(source="policy", messages=(describe_bad_action(action),)))
            reply = EnvReply([Message(role="user", content=f"error: {exc}")])
        reply_messages = [_cap_message(m, self.max_observation_chars) for m in reply.messages]
        ep.turns.append(Turn(source="env", messages=tuple(reply_messages)))
        terminated = reply.done
        truncated = not terminated and (ep.step_index >= self.max_turns or ep.end_requested)
        info: dict[str, Any] = {"task_id": ep.task.id, "messages": [m.to_openai() for m in reply_messages]}
        reward = 0.0
        if terminated or truncated:
            ep.done = True
            verdict = await self._verify(ep)
            info["verdict"] = verdict
            reward = combined_reward(verdict.outcome, verdict.path_signal, self.reward_config.beta)
            await self.end_episode()
        observation = "\n".join(m.content for m in reply_messages)
        return observation, reward, terminated, truncated, info

    async def afinish(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Step ``action`` as the episode's last: if the env does not terminate, it is
        truncated there, so the verdict always comes back (an agent that stops talking, an
        MCP client's ``submit``, a trainer scoring a completion)."""
        if self._episode is not None:
            self._episode.end_requested = True
        return await self.astep(action)

    async def aclose(self) -> None:
        """The async twin of :meth:`close`, less the event loop (which stays for reuse)."""
        if self._episode is not None and not self._episode.done:
            await self.end_episode()
        self._episode = None

    # ----------------------------------------------------------- sync facade
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a new episode: pick a task and bring the env to its pristine initial state.

        Args:
            seed: seeds the env's random generator (``self.np_random``), which picks the task
                when ``options`` names none. The same seed gives the same task and the same
                initial state, byte for byte, on any machine.
            options: ``{"task_id": ID}`` plays that task (of either split); the same task id
                gives the same initial state. Without it, a task of ``self.split`` is drawn.

        Returns:
            observation (str): the task prompt.
            info (dict): ``task_id``, ``env_id``, ``split``, ``tools`` (the OpenAI tools
            schema offered to the model) and ``messages`` (the chat so far, OpenAI format:
            an optional system prompt and the prompt). The task's hidden part is in neither.

        Raises:
            UnknownTask: ``options["task_id"]`` is not in this env's task set.
        """
        return self.run_sync(self.areset(seed=seed, options=options))

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Answer one action of the model; at the end of the episode, verify it.

        Args:
            action: the model's message: text, a dict in OpenAI format, or a
                :class:`~gymhub.types.Message`, possibly with tool calls. A bad action
                (malformed tool call, unknown tool, non-UTF-8 bytes, over
                ``max_action_bytes``) is answered with an error observation the model can
                recover from and recorded for the ``invalid-action`` rule; it never raises.

        Returns:
            observation (str): the environment's reply (tool results, messages) as text.
            reward (float): 0 until the episode ends; then ``O + β·Φ`` of the verdict
            (:func:`~gymhub.types.combined_reward`, β from ``self.reward_config``).
            terminated (bool): the task reached an end the agent chose (it submitted).
            truncated (bool): the turn limit (``max_turns``) or :meth:`finish` cut it off.
            info (dict): ``task_id``, ``messages`` (the reply as chat messages) and, when
            the episode ends either way, ``verdict``: the :class:`~gymhub.types.Verdict`
            the verifier read from the final state.

        Raises:
            EpisodeOver: called before :meth:`reset` or after the episode ended.
        """
        return self.run_sync(self.astep(action))

    def finish(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """:meth:`step` ``action`` as the episode's last (see :meth:`afinish`)."""
        return self.run_sync(self.afinish(action))

    def close(self) -> None:
        """End the episode, if one is running, and release the env's resources (its sandbox,
        its event loop). The env may be reset again afterwards."""
        if self._episode is not None:
            self.run_sync(self.aclose())
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def run_sync(self, coro: Any) -> Any:
        """Run a coroutine of this env on its private event loop (how the sync methods run)."""
        return run_on_own_loop(self, coro)

    # ----------------------------------------------------------- internals
    @property
    def episode_trajectory(self) -> Trajectory:
        """The current episode as a text-only trajectory (what the verifier reads)."""
        ep = self._episode
        if ep is None:
            raise EpisodeOver("no episode: call reset() first")
        return Trajectory(
            id="episode",
            task_id=ep.task.id,
            env_id=self.env_id,
            turns=tuple(ep.turns),
            env_version=self.version,
            verifier_version=self.verifier.version,
        )

    def initial_state_fingerprint(self) -> str:
        """A hash of the state right after reset (what ``check_env`` compares)."""
        return state_fingerprint(self.run_sync(self.final_state()))

    @property
    def bad_action_steps(self) -> list[int]:
        return list(self._episode.bad_actions) if self._episode else []

    async def _verify(self, ep: _Episode) -> Verdict:
        trajectory = self.episode_trajectory
        try:
            state = await self.final_state()
            return await asyncio.wait_for(
                asyncio.to_thread(self.verifier.verify, ep.task, state, trajectory), self.verify_timeout_s
            )
        except asyncio.TimeoutError:  # the worker thread finishes on its own; its verdict is dropped
            return self._errored_verdict(
                ep, trajectory, f"verifier timed out after {self.verify_timeout_s:g} s"
            )
        except Exception as exc:  # a verifier crash is a verdict, never a lost episode
            return self._errored_verdict(ep, trajectory, f"{type(exc).__name__}: {exc}"[:2000])

    def _errored_verdict(self, ep: _Episode, trajectory: Trajectory, reason: str) -> Verdict:
        """Outcome 0, no path credit, and the reason."""
        verdict = Verdict(
            outcome=0.0, verifier=self.verifier.id, verifier_version=self.verifier.version, error=reason
        )
        return verdict.with_digest(ep.task.id, None, trajectory)

    def _check_tool_calls(self, message: Message) -> EnvReply | None:
        """Error tool results for unknown tools or malformed arguments; None if all are fine."""
        if not message.tool_calls:
            return None
        names = [t["function"]["name"] for t in self.tools()]
        errors = []
        for call in message.tool_calls:
            problem = _tool_call_problem(call, names)
            if problem:
                errors.append(
                    Message(role="tool", tool_call_id=call.id, name=call.name, content=f"error: {problem}")
                )
        if not errors:
            return None
        ok = [c for c in message.tool_calls if not _tool_call_problem(c, names)]
        errors += [
            Message(
                role="tool",
                tool_call_id=c.id,
                name=c.name,
                content="error: not run, another call in this message was invalid",
            )
            for c in ok
        ]
        return EnvReply(errors, done=False)


_TASK_CACHE: dict[tuple[type, str, int], tuple[Task, ...]] = {}


def _cached_tasks(env: Env, cls: type, env_id: str, task_seed: int) -> tuple[Task, ...]:
    key = (cls, env_id, task_seed)
    if key not in _TASK_CACHE:
        tasks = tuple(env.load_tasks())
        ids = [t.id for t in tasks]
        if len(set(ids)) != len(ids):
            raise GymhubError(f"{env_id}: duplicate task ids in the task set")
        _TASK_CACHE[key] = tasks
    return _TASK_CACHE[key]


def _tool_call_problem(call: ToolCall, names: list[str]) -> str | None:
    if call.name not in names:
        avail = ", ".join(names) or "none"
        return f"unknown tool {call.name!r}; available tools: {avail}"
    try:
        call.parsed_arguments()
    except ValueError as exc:
        return f"malformed arguments for {call.name!r} (must be a JSON object): {exc}"
    return None


def coerce_action(action: Any, max_bytes: int, tool_names: list[str] | None = None) -> Message:
    """Turn whatever a caller passed as an action into an assistant :class:`Message`.

    Raises :class:`BadAction` with a message the model can act on.
    """
    if isinstance(action, (bytes, bytearray)):
        if len(action) > max_bytes:
            raise BadAction(f"action is {len(action)} bytes; the limit is {max_bytes}")
        try:
            action = bytes(action).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadAction(f"action is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if isinstance(action, str):
        _check_text(action, max_bytes)
        calls = parse_tool_calls(action, tool_names) if tool_names else []
        return Message(role="assistant", content=action, tool_calls=tuple(calls))
    if isinstance(action, Message):
        message = action
    elif isinstance(action, dict):
        try:
            message = message_from_openai({"role": "assistant", **action})
        except (ValidationError, TypeError, ValueError, KeyError, AttributeError) as exc:  # wrong types
            raise BadAction(f"action is not a valid chat message: {exc}"[:500]) from None
    else:
        raise BadAction(f"action must be text or a chat message, not {type(action).__name__}")
    if message.role != "assistant":
        raise BadAction(f"action must be an assistant message, not role {message.role!r}")
    _check_text(message.content, max_bytes)
    if not message.tool_calls and tool_names:
        calls = parse_tool_calls(message.content, tool_names)
        if calls:
            message = message.model_copy(update={"tool_calls": tuple(calls)})
    return message


def _check_text(text: str, max_bytes: int) -> None:
    if len(text) > max_bytes:
        raise BadAction(f"action is {len(text)} characters; the limit is {max_bytes} bytes")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadAction("action contains unpaired surrogates (not valid UTF-8)") from None
    if size > max_bytes:
        raise BadAction(f"action is {size} bytes; the limit is {max_bytes}")


def message_from_openai(data: dict[str, Any]) -> Message:
    """Build a :class:`Message` from an OpenAI-format dict (tool calls nested under function)."""
    calls = []
    for i, raw in enumerate(data.get("tool_calls") or []):
        fn = raw.get("function", raw)
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            import json

            args = json.dumps(args)
        calls.append(ToolCall(id=str(raw.get("id") or f"call_{i}"), name=str(fn["name"]), arguments=args))
    return Message(
        role=data.get("role", "assistant"),
        content=data.get("content") or "",
        tool_calls=tuple(calls),
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )


def describe_bad_action(action: Any) -> Message:
    """A loggable stand-in for an action that could not be parsed (bytes, huge, wrong type)."""
    if isinstance(action, (bytes, bytearray)):
        text = bytes(action[:2000]).decode("utf-8", errors="replace")
        return Message(role="assistant", content=f"[bad action: {len(action)} bytes] {text}")
    if isinstance(action, str):
        safe = action[:2000].encode("utf-8", errors="replace").decode("utf-8")
        return Message(role="assistant", content=f"[bad action: {len(action)} chars] {safe}")
    return Message(role="assistant", content=f"[bad action: {type(action).__name__}]")


def _cap_message(message: Message, limit: int) -> Message:
    if len(message.content) <= limit:
        return message
    cut = len(message.content) - limit
    return message.model_copy(update={"content": message.content[:limit] + f"\n[... {cut} characters cut]"})
