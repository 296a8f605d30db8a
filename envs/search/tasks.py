"""Questions over the fictional encyclopedia: single-hop and multi-hop, with gold documents."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gymhub._tool_calls import scripted_tool_calls
from gymhub.envs.search.corpus import Entity, build_world
from gymhub.types import Task, content_split
from gymhub.verifiers.checkers.text_match import normalize_answer

Question = tuple[str, str, list[Entity]]  # question, answer, gold entities (in hop order)
INSTRUCTIONS = (
    "Search the encyclopedia with `search`, read documents with `open`, and give "
    "your final answer — one answer, as short as possible — with `answer`."
)


class SearchQuestion(BaseModel):
    """One drawn question, before it becomes a :class:`Task`.

    ``difficulty`` is the number of hops: documents to chain, in order (``gold_docs``), from the
    one found by searching ``search_query`` to the one holding the answer.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    difficulty: Literal[1, 2]
    question: str
    answer: str
    search_query: str
    gold_docs: list[str]

    def task(self, env_id: str) -> Task:
        hidden = {
            "answer": self.answer,
            "gold_docs": self.gold_docs,
            "solutions": {
                "reference": self.reference(),
                "wrong": _script([("answer", {"text": "I do not know"})]),
            },
        }
        prompt = f"{self.question}\n\n{INSTRUCTIONS}"
        task = Task.create(env_id, "train", prompt, hidden, {"kind": self.kind, "hops": self.difficulty})
        return task.model_copy(update={"split": content_split(hidden)})

    def reference(self) -> list[dict[str, Any]]:
        """Search for the first gold document, open every gold document, answer."""
        calls: list[tuple[str, dict[str, Any]]] = [("search", {"query": self.search_query, "k": 5})]
        calls += [("open", {"doc_id": doc_id}) for doc_id in self.gold_docs]
        calls.append(("answer", {"text": self.answer}))
        return _script(calls)


def _by_name(world: dict[str, list[Entity]]) -> dict[str, Entity]:
    return {e.name: e for kind in world.values() for e in kind}


def single_hop(world: dict[str, list[Entity]], rng: random.Random) -> list[Callable[[], Question]]:
    def company_year() -> Question:
        c = rng.choice(world["company"])
        return f"In which year was {c.name} founded?", str(c.attrs["founded"]), [c]

    def company_founder() -> Question:
        c = rng.choice(world["company"])
        return f"Who founded {c.name}?", c.attrs["founder"], [c]

    def birth_city() -> Question:
        p = rng.choice(world["person"])
        return f"In which city was {p.name} born?", p.attrs["birth_city"], [p]

    def capital() -> Question:
        c = rng.choice(world["country"])
        return f"What is the capital of {c.name}?", c.attrs["capital"], [c]

    def river_city() -> Question:
        r = rng.choice(world["river"])
        return f"Which city does the {r.name} flow through?", r.attrs["city"], [r]

    return [company_year, company_founder, birth_city, capital, river_city]


def multi_hop(world: dict[str, list[Entity]], rng: random.Random) -> list[Callable[[], Question]]:
    names = _by_name(world)

    def founder_birth_city() -> Question:
        c = rng.choice(world["company"])
        founder = names[c.attrs["founder"]]
        return f"In which city was the founder of {c.name} born?", founder.attrs["birth_city"], [c, founder]

    def hq_country() -> Question:
        c = rng.choice(world["company"])
        city = names[c.attrs["headquarters"]]
        return f"In which country are the headquarters of {c.name}?", city.attrs["country"], [c, city]

    def founder_birth_year() -> Question:
        c = rng.choice(world["company"])
        founder = names[c.attrs["founder"]]
        return f"In which year was the founder of {c.name} born?", str(founder.attrs["born"]), [c, founder]

    return [founder_birth_city, hq_country, founder_birth_year]


def build_search_tasks(env_id: str, seed: int = 0, per_kind: int = 45) -> list[Task]:
    """``per_kind`` questions of each kind, no two of a kind with the same (normalised) answer:
    a constant answer is then right on at most one question of a kind."""
    world = build_world(seed)
    rng = random.Random(f"questions:{seed}")
    tasks: list[Task] = []
    seen: set[str] = set()
    kinds: list[tuple[Callable[[], Question], Literal[1, 2]]] = [(f, 1) for f in single_hop(world, rng)]
    kinds += [(f, 2) for f in multi_hop(world, rng)]
    for make, hops in kinds:
        made, answers = 0, set()
        while made < per_kind:
            question, answer, gold = make()
            if normalize_answer(answer) in answers:
                continue
            spec = SearchQuestion(
                kind=make.__name__,
                difficulty=hops,
                question=question,
                answer=answer,
                search_query=gold[0].name,
                gold_docs=[e.doc_id for e in gold],
            )
            task = spec.task(env_id)
            if task.id in seen:
                continue
            seen.add(task.id)
            answers.add(normalize_answer(answer))
            made += 1
            tasks.append(task)
    return tasks


_script = scripted_tool_calls
