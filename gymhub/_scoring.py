"""Score a completion for a task: the verifier as a reward function.

Trainers that generate on their own (TRL, verl, OpenRLHF) hand gymhub a task id and what the
model wrote; :class:`CompletionScorer` replays it as the episode's actions in a fresh episode
of the env (:func:`~gymhub._episodes.replay_actions`) and returns the verifier's
:class:`~gymhub.types.Verdict` — read from the final state, as always, never from what the
completion claims. The last action ends the episode (:meth:`~gymhub.env.Env.afinish`), so a
completion that never "submits" still gets a verdict.
Verdicts are cached by (task, actions): two reward functions for one completion (the outcome
and the path signal) share one verification. Envs are pooled, one per worker thread.
"""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gymhub._episodes import replay_actions
from gymhub.env import Env, coerce_action
from gymhub.errors import GymhubError
from gymhub.registry import make
from gymhub.types import Message, Verdict, canonical_json

Completion = str | dict[str, Any] | Message | Sequence[dict[str, Any] | Message]


def completion_actions(completion: Completion) -> list[Message]:
    """The policy messages of a completion: a string, one message, or a chat (its assistant turns)."""
    if isinstance(completion, str | dict | Message):
        items: list[Any] = [completion]
    else:
        items = [
            m for m in completion if (m.role if isinstance(m, Message) else m.get("role")) == "assistant"
        ]
    if not items:
        raise GymhubError("the completion holds no assistant message to score")
    return [coerce_action(item, max_bytes=10_000_000) for item in items]


class CompletionScorer:
    """Verdicts for (task id, completion) pairs on one env; thread-safe, cached, pooled."""

    def __init__(
        self,
        env_id: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        workers: int = 2,
        cache_size: int = 4096,
    ) -> None:
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.workers = max(1, workers)
        self._envs: queue.SimpleQueue[Env] = queue.SimpleQueue()
        self._created = 0
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Verdict] = OrderedDict()
        self._cache_size = cache_size
        self.verifications = 0  # how many episodes were actually replayed (cache misses)
        self.reward_config = self._borrow_env_config()

    def _borrow_env_config(self) -> Any:
        env = make(self.env_id, **self.env_kwargs)
        self._envs.put(env)
        self._created = 1
        return env.reward_config

    def _take_env(self) -> Env:
        try:
            return self._envs.get_nowait()
        except queue.Empty:
            with self._lock:
                self._created += 1
            return make(self.env_id, **self.env_kwargs)

    def score(self, task_id: str, completion: Completion) -> Verdict:
        actions = completion_actions(completion)
        key = canonical_json({"task": task_id, "actions": [a.model_dump(mode="json") for a in actions]})
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        verdict = self._replay(task_id, actions)
        with self._lock:
            self.verifications += 1
            self._cache[key] = verdict
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return verdict

    def _replay(self, task_id: str, actions: list[Message]) -> Verdict:
        env = self._take_env()
        try:
            # the episode ends with the completion, whatever it says; a fixed seed, so the
            # same completion always replays the same episode
            verdict: Verdict | None = env.run_sync(
                replay_actions(env, task_id, actions, seed=0, end_with_last=True)
            )
        finally:
            self._envs.put(env)
        if verdict is None:  # pragma: no cover - end_with_last: the last action ends the episode
            raise GymhubError("the episode did not end after the completion's actions")
        return verdict

    def score_many(self, items: Sequence[tuple[str, Completion]]) -> list[Verdict]:
        """Verdicts for many pairs, in order, on up to ``workers`` envs at once."""
        if len(items) <= 1 or self.workers == 1:
            return [self.score(t, c) for t, c in items]
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(lambda item: self.score(*item), items))

    def close(self) -> None:
        while True:
            try:
                self._envs.get_nowait().close()
            except queue.Empty:
                return
