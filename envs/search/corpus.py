"""A procedurally generated fictional encyclopedia: 2,000 documents about people, cities,
companies, countries and rivers, with attributes and relations between them. Nothing in it
can be known from pre-training. Seeded: the same corpus on every machine."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any

SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ren",
    "tor",
    "va",
    "shi",
    "dun",
    "el",
    "qua",
    "bri",
    "zan",
    "fe",
    "gor",
    "nys",
    "tal",
    "or",
    "pim",
    "sar",
    "ul",
    "vex",
    "wen",
    "yor",
    "bel",
    "cas",
    "dro",
    "hal",
    "jin",
    "kov",
    "lum",
]
INDUSTRIES = [
    "shipbuilding",
    "textiles",
    "glassware",
    "software",
    "rail",
    "mining",
    "perfume",
    "clocks",
    "paper",
    "tea",
]
PROFESSIONS = [
    "engineer",
    "painter",
    "botanist",
    "merchant",
    "architect",
    "composer",
    "surgeon",
    "cartographer",
]
CONTINENTS = ["Arvania", "Belloria", "Cystra", "Dunmere"]
COUNTS = {"country": 100, "city": 400, "river": 200, "person": 700, "company": 600}


@dataclass
class Entity:
    kind: str
    name: str
    attrs: dict[str, Any] = field(default_factory=dict)
    doc_id: str = ""


def _word(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


def _unique(rng: random.Random, used: set[str], make: Any) -> str:
    """A full name nobody else has (only the whole name must be unique)."""
    for _ in range(10_000):
        name = str(make(rng))
        if name not in used:
            used.add(name)
            return name
    raise RuntimeError("name space exhausted")


@functools.lru_cache(maxsize=4)
def build_world(seed: int = 0) -> dict[str, list[Entity]]:
    rng = random.Random(f"encyclopedia:{seed}")
    used: set[str] = set()
    world: dict[str, list[Entity]] = {k: [] for k in COUNTS}
    for _ in range(COUNTS["country"]):
        world["country"].append(
            Entity(
                "country",
                _unique(rng, used, lambda r: _word(r, 3) + "ia"),
                {"continent": rng.choice(CONTINENTS), "currency": _word(rng, 2).lower()},
            )
        )
    for _ in range(COUNTS["city"]):
        world["city"].append(
            Entity(
                "city",
                _unique(rng, used, lambda r: _word(r, 2) + r.choice(["burg", "port", "vale", "ford", ""])),
                {
                    "country": rng.choice(world["country"]).name,
                    "population": rng.randint(2, 900) * 1000,
                    "founded": rng.randint(800, 1900),
                },
            )
        )
    for country in world["country"]:
        country.attrs["capital"] = rng.choice(
            [c for c in world["city"] if c.attrs["country"] == country.name] or world["city"]
        ).name
    for _ in range(COUNTS["river"]):
        world["river"].append(
            Entity(
                "river",
                _unique(rng, used, lambda r: _word(r, 2) + " River"),
                {"length_km": rng.randint(40, 3000), "city": rng.choice(world["city"]).name},
            )
        )
    for _ in range(COUNTS["person"]):
        world["person"].append(
            Entity(
                "person",
                _unique(rng, used, lambda r: f"{_word(r, 2)} {_word(r, 2)}"),
                {
                    "born": rng.randint(1700, 1990),
                    "birth_city": rng.choice(world["city"]).name,
                    "profession": rng.choice(PROFESSIONS),
                },
            )
        )
    for _ in range(COUNTS["company"]):
        world["company"].append(
            Entity(
                "company",
                _unique(rng, used, lambda r: _word(r, 2) + r.choice([" Works", " & Co", " Guild", " Ltd"])),
                {
                    "founded": rng.randint(1750, 2020),
                    "founder": rng.choice(world["person"]).name,
                    "headquarters": rng.choice(world["city"]).name,
                    "industry": rng.choice(INDUSTRIES),
                },
            )
        )
    index = 0
    for kind in COUNTS:
        for entity in world[kind]:
            index += 1
            entity.doc_id = f"doc-{index:05d}"
    return world


def describe(e: Entity) -> str:
    a = e.attrs
    if e.kind == "country":
        return (
            f"{e.name} is a country on the continent of {a['continent']}. "
            f"Its capital is {a['capital']} and its currency is the {a['currency']}."
        )
    if e.kind == "city":
        return (
            f"{e.name} is a city in {a['country']}, founded in {a['founded']}. It has a population of about "
            f"{a['population']:,} people."
        )
    if e.kind == "river":
        return f"The {e.name} is {a['length_km']} km long and flows through the city of {a['city']}."
    if e.kind == "person":
        return f"{e.name} was a {a['profession']} born in {a['born']} in the city of {a['birth_city']}."
    return (
        f"{e.name} is a {a['industry']} company founded in {a['founded']} by {a['founder']}. "
        f"Its headquarters are in {a['headquarters']}."
    )


@functools.lru_cache(maxsize=4)
def documents(seed: int = 0) -> tuple[dict[str, str], ...]:
    """Every document as {"id", "title", "text"}, in id order."""
    world = build_world(seed)
    docs = [{"id": e.doc_id, "title": e.name, "text": describe(e)} for kind in COUNTS for e in world[kind]]
    return tuple(sorted(docs, key=lambda d: d["id"]))
