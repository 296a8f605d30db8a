"""Task specs are typed data: each family draws a pydantic spec, with its difficulty, and turns it
into a Task; a malformed spec is refused where it is built, not found later in a task."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pydantic import ValidationError

import gymhub
from gymhub.envs.mcp_tools.tasks import BackofficeSpec, RequestRow
from gymhub.envs.search.tasks import SearchQuestion
from gymhub.envs.terminal.tasks import GENERATORS, TerminalSpec, difficulty_of
from gymhub.envs.toy.json_answer_env import ArithmeticQuestion
from gymhub.envs.toy.letters_env import LettersSpec


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_terminal_generators_draw_specs_of_the_difficulty_asked(kind: str) -> None:
    for draw in range(6):
        spec = GENERATORS[kind](random.Random(f"spec:{draw}"), difficulty_of(draw))
        assert isinstance(spec, TerminalSpec)
        assert spec.difficulty == 1 + draw % 3 == difficulty_of(draw)
        assert spec.asked == (spec.question or spec.answer)


def test_terminal_task_metadata_carries_the_spec_difficulty() -> None:
    tasks = gymhub.make("terminal-v0").all_tasks
    assert {t.metadata["difficulty"] for t in tasks} == {1, 2, 3}


def test_terminal_spec_needs_a_difficulty_in_range() -> None:
    fields: dict[str, Any] = {"prompt": "p", "files": {}, "checks": [], "reference": [], "answer": "a"}
    with pytest.raises(ValidationError, match="difficulty"):
        TerminalSpec(**fields)
    with pytest.raises(ValidationError):
        TerminalSpec(**fields, difficulty=4)


def test_search_question_difficulty_is_its_hops_and_its_reference_chains_the_gold_documents() -> None:
    spec = SearchQuestion(
        kind="hq_country",
        difficulty=2,
        question="In which country are the headquarters of Acme?",
        answer="Freedonia",
        search_query="Acme",
        gold_docs=["doc-1", "doc-2"],
    )
    task = spec.task("search-v0")
    assert task.metadata == {"kind": "hq_country", "hops": 2}
    calls = [m["tool_calls"][0]["function"]["name"] for m in task.hidden["solutions"]["reference"]]
    assert calls == ["search", "open", "open", "answer"]
    with pytest.raises(ValidationError):
        SearchQuestion.model_validate(spec.model_dump() | {"difficulty": 3})
    hops = {t.metadata["kind"]: t.metadata["hops"] for t in gymhub.make("search-v0").all_tasks}
    assert set(hops.values()) == {1, 2}


def _backoffice_spec(kind: str, lookups: int) -> BackofficeSpec:
    calls = [("find_customer", {"email": "a@b.c"}), ("verify_identity", {}), ("get_order", {"order_id": 1})]
    return BackofficeSpec(
        kind=kind,
        prompt="Customer a@b.c asks for a refund.",
        request=RequestRow(customer_id=1, sku=None, summary="full refund of order 1"),
        lookups=calls[:lookups],
        action=None,
        required=["find_customer"],
    )


def test_backoffice_difficulty_counts_the_lookups_and_a_decline_is_expected_in_the_requests() -> None:
    spec = _backoffice_spec("refund-too-old", 3)
    assert spec.difficulty == 3 and spec.model_dump()["difficulty"] == 3
    assert _backoffice_spec("refund-wrong-zip", 2).difficulty == 2
    task = spec.task("mcp-tools-v0", "RQ-00000001")
    assert task.hidden["expected"]["requests"] == {"RQ-00000001": "OUTSIDE_REFUND_WINDOW"}
    assert task.hidden["request"] == {
        "id": "RQ-00000001",
        "customer_id": 1,
        "sku": None,
        "summary": "full refund of order 1",
    }
    decline = task.hidden["solutions"]["reference"][-2]["tool_calls"][0]["function"]
    assert decline["name"] == "decline_request"
    with pytest.raises(KeyError):  # an allowed kind without its action has no reason code to decline with
        _backoffice_spec("refund-allowed", 3).task("mcp-tools-v0", "RQ-00000002")


def test_backoffice_tasks_keep_their_difficulty_per_kind() -> None:
    tasks = gymhub.make("mcp-tools-v0").all_tasks
    # the look-up-only script is: get_policy, the lookups, finish
    lookups = {t.metadata["kind"]: len(t.hidden["solutions"]["look-up-only"][1:-1]) for t in tasks}
    assert lookups["restock"] == 1 and lookups["address-change"] == 2 and lookups["refund-allowed"] == 3


def test_toy_specs_refuse_malformed_tasks() -> None:
    with pytest.raises(ValidationError):
        LettersSpec(letter="A", phrasing="say {c}")
    with pytest.raises(ValidationError):
        LettersSpec(letter="ab", phrasing="say {c}")
    task = LettersSpec(letter="q", phrasing="say {c}").task("toy-letters-v0")
    assert task.prompt == "say q" and task.hidden["letter"] == "q"
    question = ArithmeticQuestion(question="What is 2 + 1?", answer=3)
    assert question.difficulty == 1
    assert question.task("toy-json-v0").hidden["solutions"]["reference"][0]["content"] == '{"answer": 3}'
    with pytest.raises(ValidationError):
        ArithmeticQuestion(question="What is 2 + 1?", answer="three")
