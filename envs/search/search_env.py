"""``search-v0``: answer questions by searching a local index over a fictional encyclopedia.

Tools: ``search(query, k)`` (BM25 through ``tantivy``: see docs/envs/search.md for why),
``open(doc_id)`` and ``answer(text)``, which ends the episode. The index is built once per
process and shared (read-only) by every env instance.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from gymhub._tool_calls import tool_schema
from gymhub.env import Env, EnvReply
from gymhub.envs.search.corpus import documents
from gymhub.envs.search.engines import ENGINES
from gymhub.envs.search.tasks import build_search_tasks
from gymhub.types import Message, Task, ToolCall
from gymhub.verifiers.base import BaseVerifier
from gymhub.verifiers.checkers.text_match import normalized_match, token_f1

MAX_K = 10
FINISH_TOOL = "answer"  # ends the episode


_tool = tool_schema


TOOLS = [
    _tool(
        "search",
        "Search the encyclopedia; returns up to k results (id, title, snippet).",
        {"query": {"type": "string"}, "k": {"type": "integer", "minimum": 1, "maximum": MAX_K}},
        ["query"],
    ),
    _tool("open", "Read one document in full.", {"doc_id": {"type": "string"}}, ["doc_id"]),
    _tool(
        "answer",
        "Give your final answer (one answer, as short as possible).",
        {"text": {"type": "string"}},
        ["text"],
    ),
]


@functools.lru_cache(maxsize=4)
def shared_index(engine: str, seed: int) -> Any:
    return ENGINES[engine](list(documents(seed)))


class SearchVerifier(BaseVerifier):
    """Outcome 1 for a normalised exact match with the gold answer; token F1 in the details."""

    id = "search-answer-match"
    version = "1.0.0"

    def check(self, task: Task, final_state: Any) -> tuple[float, dict[str, Any]]:
        answer = final_state.get("answer") or ""
        gold = task.hidden["answer"]
        match = bool(answer) and normalized_match(answer, gold)
        return (1.0 if match else 0.0), {
            "f1": token_f1(answer, gold) if answer else 0.0,
            "answered": bool(answer),
            "bad_action_steps": list(final_state.get("bad_action_steps", [])),
        }


class SearchEnv(Env):
    family: ClassVar[str] = "search"
    version: ClassVar[str] = "0.1.0"
    default_max_turns: ClassVar[int] = 12
    system_prompt: ClassVar[str | None] = "You answer questions by searching an encyclopedia with the tools."

    def __init__(self, *, engine: str = "tantivy", **kwargs: Any) -> None:
        self.engine = engine
        self._answer: str | None = None
        super().__init__(**kwargs)

    def load_tasks(self) -> list[Task]:
        return build_search_tasks(self.env_id, self.task_seed)

    def corpus(self) -> list[dict[str, str]]:
        """The documents to search ({"id", "title", "text"}); override to bring your own."""
        return list(documents(self.task_seed))

    @property
    def index(self) -> Any:
        if type(self).corpus is SearchEnv.corpus:  # the shipped corpus: one index per process
            return shared_index(self.engine, self.task_seed)
        if getattr(self, "_own_index", None) is None:
            self._own_index = ENGINES[self.engine](self.corpus())
        return self._own_index

    @property
    def docs_by_id(self) -> dict[str, dict[str, str]]:
        if getattr(self, "_docs_by_id", None) is None:
            self._docs_by_id = {d["id"]: d for d in self.corpus()}
        return self._docs_by_id

    def tools(self) -> list[dict[str, Any]]:
        return TOOLS

    def make_verifier(self) -> SearchVerifier:
        return SearchVerifier(self.rules)

    async def start_episode(self, task: Task) -> None:
        self._answer = None

    async def on_action(self, message: Message) -> EnvReply:
        answered = False

        async def call_once(call: ToolCall) -> tuple[str, bool]:
            nonlocal answered
            if answered:  # one answer per episode: nothing after it runs (the calls-after-finish rule)
                return f"error: not run, it came after {FINISH_TOOL}", True
            content, answered = self._call(call)
            return content, answered

        return await self.answer_tool_calls(message, call_once, "Use the tools: search, open, answer.")

    def _call(self, call: ToolCall) -> tuple[str, bool]:
        args = call.parsed_arguments()
        if call.name == "search":
            query, k = args.get("query"), args.get("k", 5)
            if not isinstance(query, str) or not isinstance(k, int) or not 1 <= k <= MAX_K:
                return f"error: search needs a string query and 1 <= k <= {MAX_K}", False
            docs = self.docs_by_id
            hits = self.index.search(query, k)
            lines = [
                f"{doc_id} | {docs[doc_id]['title']} | {docs[doc_id]['text'][:80]}" for doc_id, _ in hits
            ]
            return "\n".join(lines) or "no results", False
        if call.name == "open":
            doc = self.docs_by_id.get(str(args.get("doc_id")))
            return (f"{doc['title']}\n\n{doc['text']}", False) if doc else ("error: no such document", False)
        text = args.get("text")
        if not isinstance(text, str):
            return "error: answer needs a string 'text'", False
        self._answer = text
        return "answer recorded", True

    async def final_state(self) -> dict[str, Any]:
        return {"answer": self._answer, "bad_action_steps": self.bad_action_steps}
