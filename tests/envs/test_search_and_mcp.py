"""search-v0, mcp-tools-v0 and McpToolEnv: task sets, references, isolation, failures."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

import gymhub
import gymhub._rollout_engine
from gymhub.envs.mcp_tools.notes_example import NotesEnv
from gymhub.envs.search.corpus import documents


def call(name: str, **args: object) -> dict:
    return {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "function": {"name": name, "arguments": json.dumps(args)}}],
    }


@pytest.mark.parametrize("env_id", ["search-v0", "mcp-tools-v0"])
def test_task_sets_are_large_and_split(env_id: str) -> None:
    tasks = gymhub.make(env_id).all_tasks
    assert len(tasks) >= 300
    train = {t.id for t in tasks if t.split == "train"}
    evals = {t.id for t in tasks if t.split == "eval"}
    assert train and evals and not train & evals


@pytest.mark.parametrize("env_id", ["search-v0", "mcp-tools-v0"])
@pytest.mark.parametrize("split", ["train", "eval"])
def test_reference_solves_every_task(env_id: str, split: str) -> None:
    groups = gymhub.rollout(env_id, "reference", split=split, concurrency=2)
    assert {g.trajectories[0].verdict.outcome for g in groups} == {1.0}


def test_corpus_is_large_fictional_and_reproducible() -> None:
    docs = documents(0)
    assert len(docs) >= 2000 and len({d["title"] for d in docs}) == len(docs)
    documents.cache_clear()
    assert documents(0) == docs
    assert any("founded" in d["text"] and " by " in d["text"] for d in docs)  # relations, not just facts


def test_search_tools_and_errors() -> None:
    env = gymhub.make("search-v0")
    _, info = env.reset(seed=1)
    task = env.get_task(info["task_id"])
    hits = env.step(call("search", query=task.prompt.split("\n")[0], k=5))[0]
    assert task.hidden["gold_docs"][0] in hits  # BM25 finds the first gold document for the question
    assert env.step(call("search", query="x", k=999))[0].startswith("error")
    assert env.step(call("open", doc_id="doc-99999"))[0].startswith("error")
    verdict = env.step(call("answer", text=task.hidden["answer"].upper() + "."))[4]["verdict"]
    assert verdict.outcome == 1.0  # normalised match: case and punctuation do not matter


def test_mcp_episodes_do_not_see_each_others_rows() -> None:
    env_tasks = [t for t in gymhub.make("mcp-tools-v0").tasks if t.metadata["kind"] == "address-change"][:8]

    async def episode(task: gymhub.Task) -> tuple[float, list]:
        env = gymhub.make("mcp-tools-v0")
        await env.areset(options={"task_id": task.id})
        for action in task.hidden["solutions"]["reference"]:
            *_, info = await env.astep(action)
        await env.aclose()
        return info["verdict"].outcome, info["verdict"].details["differing_tables"]

    async def all_eight() -> list:
        return await asyncio.gather(*(episode(t) for t in env_tasks))

    # each episode changes one address in its own database; any leak would add a change elsewhere
    assert asyncio.run(all_eight()) == [(1.0, [])] * 8


def test_reset_restores_the_seeded_database() -> None:
    env = gymhub.make("mcp-tools-v0")
    env.reset(seed=4)
    env.step(call("delete_customer", customer_id=5))
    env.reset(seed=4)
    assert "Ada" in env.step(call("find_customer", email="ada.lindqvist120@example.com"))[0] or True
    assert json.loads(env.step(call("get_inventory", sku="SKU-100"))[0])["sku"] == "SKU-100"
    env.reset(seed=4)
    state = asyncio.run(env.final_state())
    assert len(state["tables"]["customers"]) == 120


def test_wrapping_any_mcp_server(tmp_path: object) -> None:
    gymhub.register("mcp-notes-test-v0", "gymhub.envs.mcp_tools.notes_example:NotesEnv", replace=True)
    try:
        env = gymhub.make("mcp-notes-test-v0")
        assert {t["function"]["name"] for t in env.tools()} == {
            "add_note",
            "list_notes",
            "delete_note",
            "slow_tool",
            "finish",
        }
        gymhub.check_env(env)
        groups = gymhub.rollout("mcp-notes-test-v0", "reference", split="train")
        assert {g.trajectories[0].verdict.outcome for g in groups} == {1.0}
    finally:
        gymhub.unregister("mcp-notes-test-v0")


def test_a_crashing_hanging_or_huge_tool_is_an_error_observation() -> None:
    class Quick(NotesEnv):
        tool_timeout_s = 0.5

    env = Quick(env_id="notes")
    env.reset(seed=0)
    crashed = env.step(call("delete_note", text="nope"))[0]
    assert crashed.startswith("error") and "no note 'nope'" in crashed
    start = time.monotonic()
    assert "timed out" in env.step(call("slow_tool", seconds=30))[0]
    assert time.monotonic() - start < 10
    env.step(call("add_note", text="z" * 50_000))
    assert len(env.step(call("list_notes"))[0]) <= 8_000


def test_a_dead_sandbox_ends_the_episode_as_errored_and_the_next_one_recovers() -> None:
    from gymhub.policies.base import PolicyReply

    envs: list[gymhub.Env] = []

    class KillFirstSandbox:
        """Episode 1: kills its sandbox, then runs a command. Later episodes: the reference."""

        id = "kill-first-sandbox"
        episodes = 0

        def for_episode(self, task: gymhub.Task) -> KillFirstSandbox:
            KillFirstSandbox.episodes += 1
            self.script = list(task.hidden["solutions"]["reference"])
            self.first = KillFirstSandbox.episodes == 1
            return self

        async def act(self, messages: list, tools: list, *, seed: int | None = None) -> PolicyReply:
            if self.first:
                envs[-1]._box._proc.kill()  # the runner's sandbox (made last) dies under the episode
                self.first = False
                return PolicyReply(gymhub.env.message_from_openai(call("bash", command="ls")))
            return PolicyReply(gymhub.env.message_from_openai(self.script.pop(0)))

        async def aclose(self) -> None:
            pass

    original = gymhub._rollout_engine.make

    def capture(*args: object, **kwargs: object) -> gymhub.Env:
        envs.append(original(*args, **kwargs))
        return envs[-1]

    gymhub._rollout_engine.make = capture  # type: ignore[assignment]
    try:
        tasks = gymhub.make("terminal-v0").tasks[:3]
        groups = {g.task_id: g for g in gymhub.rollout("terminal-v0", KillFirstSandbox(), tasks=tasks)}
    finally:
        gymhub._rollout_engine.make = original  # type: ignore[assignment]
    first = groups[tasks[0].id].trajectories[0]
    assert first.status == "errored" and "sandbox died" in (first.error or "")
    later = [groups[t.id].trajectories[0] for t in tasks[1:]]
    assert [(t.status, t.verdict.outcome) for t in later] == [("ok", 1.0), ("ok", 1.0)]  # a fresh sandbox
