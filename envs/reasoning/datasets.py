"""The reasoning-gym datasets as gymhub envs: a static, data-only table.

The registry reads :data:`REGISTRY_SPECS` when it loads (``registry.yaml``'s ``families``
section), so this module imports nothing but the standard library: ``import gymhub`` never
imports reasoning-gym. Each row says how a dataset's answers are scored and whether it is
registered as ``rg-<name>-v0``; a dataset left out says why (docs/envs/reasoning.md lists them
all, with the measured blind floors). The table was built against :data:`REASONING_GYM_VERSION`
(``benchmarks/reasoning_scoring.py`` re-measures it).

Scoring: ``exact`` is the canonical exact match of :mod:`gymhub.envs.reasoning.answers` for the
row's answer type; ``checker`` is reasoning-gym's own ``score_answer``, used only where a task
has many valid answers and that checker was verified exact (it gives 1.0 to a valid answer and
no credit to the hacks), and counted only when it returns exactly 1.0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REASONING_GYM_VERSION = "0.1.25"
FAMILY = "reasoning"
RULES: dict[str, Any] = {
    "empty-reply": 1.0,
    "invalid-action": 1.0,
    "answer-format": 1.0,
    "reply-length": 1.0,
    "repetition-loop": 1.0,
}


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    answer_type: str  # one of gymhub.envs.reasoning.answers.ANSWER_TYPES
    scoring: str  # "exact" | "checker"
    left_out: str = ""  # why the dataset is not registered ("" when it is)

    @property
    def env_id(self) -> str:
        return f"rg-{self.name}-v0"

    @property
    def registered(self) -> bool:
        return not self.left_out


_SLOW = (
    "generating is slow here (~{} s per 120 items on the 2-core test machine): over the test "
    "budget of 3 min for every rg env"
)
_FLOOR = (
    "blind floor: the constant answer {!r} scores {} on a {} sample (the floor is 0.05): "
    "the answer space is too small"
)
_FREQUENT = (
    "blind floor: blind:frequent (the most frequent train answer) scores {} on a {} sample "
    "(the floor is 0.05): the answer space is too small"
)
_UNSTABLE = (
    "not reproducible: the same seeds give other tasks under another PYTHONHASHSEED "
    "(the generator's output depends on Python's hash seed), so task ids differ between processes"
)
_NO_GOLD = (
    "no gold answer in the generator's output (many valid answers, no reference solution): "
    "the reference-policy check cannot hold"
)
# name: (answer type, scoring, reason left out or "")
_TABLE: dict[str, tuple[str, str, str]] = {
    "ab": ("list", "exact", ""),
    "acre": ("word", "exact", _FREQUENT.format(0.50, "train")),
    "advanced_geometry": ("text", "exact", ""),
    "aiw": ("integer", "exact", _FREQUENT.format(0.31, "eval")),
    "arc_1d": ("list", "exact", ""),
    "arc_agi": ("grid", "exact", _SLOW.format(7)),
    "base_conversion": ("word", "exact", ""),
    "basic_arithmetic": ("integer", "exact", _FLOOR.format("0", 0.09, "eval")),
    "bf": ("word", "exact", ""),
    "binary_alternation": ("integer", "exact", _FLOOR.format("1", 0.06, "eval")),
    "binary_matrix": ("grid", "exact", ""),
    "bitwise_arithmetic": ("word", "exact", ""),
    "boxnet": ("text", "checker", _NO_GOLD),
    "caesar_cipher": ("word", "exact", ""),
    "calendar_arithmetic": ("word", "exact", _FLOOR.format("no", 0.08, "eval")),
    "chain_sum": ("integer", "exact", ""),
    "circuit_logic": ("integer", "exact", _FLOOR.format("0", 0.55, "train")),
    "codeio": ("structure", "exact", _UNSTABLE),
    "coin_flip": ("number", "exact", ""),
    "color_cube_rotation": ("word", "exact", _FREQUENT.format(0.20, "train")),
    "complex_arithmetic": ("expression", "exact", ""),
    "composite": (
        "text",
        "exact",
        "a meta-dataset that mixes the others (it needs a list of datasets); "
        "use the RG_MIX preset or GRPOConfig(env={...}) instead",
    ),
    "count_bits": ("integer", "exact", _FREQUENT.format(0.08, "eval")),
    "count_primes": ("integer", "exact", ""),
    "countdown": ("expression", "checker", _SLOW.format(12)),
    "course_schedule": ("word", "exact", _FLOOR.format("True", 0.5, "train")),
    "cryptarithm": ("set", "exact", ""),
    "decimal_arithmetic": ("number", "exact", ""),
    "decimal_chain_sum": ("number", "exact", ""),
    "dice": ("number", "exact", _FREQUENT.format(0.10, "train")),
    "emoji_mystery": ("text", "exact", ""),
    "family_relationships": ("word", "exact", _FREQUENT.format(0.06, "eval")),
    "figlet_font": ("word", "exact", ""),
    "fraction_simplification": ("word", "exact", ""),
    "futoshiki": ("grid", "exact", _SLOW.format(160)),
    "game_of_life": ("structure", "exact", _SLOW.format(7)),
    "game_of_life_halting": ("word", "exact", _FLOOR.format("True", 0.3, "train")),
    "gcd": ("integer", "exact", _FLOOR.format("1", 0.15, "train")),
    "graph_color": ("text", "checker", _NO_GOLD),
    "group_anagrams": ("structure", "checker", ""),
    "gsm_symbolic": ("integer", "exact", _FREQUENT.format(0.15, "train")),
    "intermediate_integration": ("expression", "checker", _SLOW.format(40)),
    "isomorphic_strings": ("word", "exact", _FLOOR.format("True", 0.65, "train")),
    "jugs": ("structure", "checker", ""),
    "kakurasu": ("grid", "exact", ""),
    "knight_swap": ("structure", "exact", _SLOW.format(700)),
    "knights_knaves": ("text", "exact", ""),
    "largest_island": ("integer", "exact", _FLOOR.format("0", 0.3, "train")),
    "lcm": ("integer", "exact", ""),
    "leg_counting": ("integer", "exact", ""),
    "letter_counting": ("integer", "exact", _FLOOR.format("1", 0.4, "train")),
    "letter_jumble": ("text", "exact", ""),
    "list_functions": ("structure", "exact", _UNSTABLE),
    "mahjong_puzzle": ("word", "exact", _FREQUENT.format(0.45, "train")),
    "manipulate_matrix": ("grid", "exact", ""),
    "maze": ("integer", "exact", _FREQUENT.format(0.20, "eval")),
    "mini_sudoku": ("grid", "exact", ""),
    "modulo_grid": ("grid", "exact", ""),
    "n_queens": ("grid", "checker", ""),
    "needle_haystack": ("word", "exact", ""),
    "number_filtering": ("list", "exact", ""),
    "number_format": ("number", "exact", ""),
    "number_sequence": ("integer", "exact", _FLOOR.format("0", 0.1, "train")),
    "number_sorting": ("list", "exact", ""),
    "palindrome_generation": ("word", "checker", ""),
    "palindrome_partitioning": ("structure", "checker", ""),
    "path_star": ("list", "exact", ""),
    "polynomial_equations": ("set", "checker", _SLOW.format(22)),
    "polynomial_multiplication": ("expression", "checker", _UNSTABLE),
    "pool_matrix": ("grid", "exact", ""),
    "power_function": ("number", "exact", _FLOOR.format("1", 0.1, "train")),
    "prime_factorization": ("expression", "exact", ""),
    "products": ("integer", "exact", _FLOOR.format("0", 0.1, "train")),
    "propositional_logic": ("text", "checker", _NO_GOLD),
    "puzzle24": ("expression", "checker", _SLOW.format(60)),
    "quantum_lock": ("text", "exact", _SLOW.format(25)),
    "ransom_note": ("word", "exact", _FLOOR.format("True", 0.7, "train")),
    "rearc": ("grid", "exact", ""),
    "rectangle_count": ("integer", "exact", _FLOOR.format("1", 0.15, "train")),
    "rotate_matrix": ("grid", "exact", ""),
    "rotten_oranges": ("integer", "exact", _FREQUENT.format(0.30, "train")),
    "rubiks_cube": ("text", "checker", _NO_GOLD),
    "rush_hour": ("text", "checker", _NO_GOLD),
    "self_reference": ("integer", "exact", _FREQUENT.format(0.40, "train")),
    "sentence_reordering": ("text", "exact", ""),
    "shortest_path": ("text", "checker", _FREQUENT.format(0.40, "train")),
    "simple_equations": ("integer", "exact", _FLOOR.format("1", 0.12, "eval")),
    "simple_geometry": ("integer", "exact", ""),
    "simple_integration": ("expression", "checker", ""),
    "sokoban": ("word", "checker", _SLOW.format(160)),
    "spell_backward": ("word", "exact", ""),
    "spiral_matrix": ("list", "exact", ""),
    "string_insertion": ("word", "exact", ""),
    "string_manipulation": ("word", "exact", ""),
    "string_splitting": ("list", "exact", ""),
    "string_synthesis": ("list", "exact", ""),
    "sudoku": ("grid", "exact", _SLOW.format(20)),
    "survo": ("grid", "exact", ""),
    "syllogism": ("word", "exact", _FLOOR.format("yes", 0.85, "train")),
    "time_intervals": ("word", "exact", ""),
    "tower_of_hanoi": ("grid", "checker", ""),
    "tsumego": ("word", "exact", ""),
    "word_ladder": ("list", "checker", _SLOW.format(6)),
    "word_sequence_reversal": ("list", "exact", ""),
    "word_sorting": ("list", "exact", ""),
    "zebra_puzzles": ("word", "exact", _SLOW.format(80)),
}

DATASETS: dict[str, DatasetInfo] = {
    name: DatasetInfo(name, answer_type, scoring, reason)
    for name, (answer_type, scoring, reason) in sorted(_TABLE.items())
}


def registry_spec(info: DatasetInfo) -> dict[str, Any]:
    how = "exact match after canonical normalisation" if info.scoring == "exact" else "its exact checker"
    return {
        "id": info.env_id,
        "entry_point": "gymhub.envs.reasoning.env:ReasoningEnv",
        "family": FAMILY,
        "description": f"reasoning-gym {info.name}: one <answer>; {info.answer_type} answers, {how}.",
        "version": "0.1.0",
        "sandbox": "none",
        "verifier": "reasoning-answer",
        "task_set": (
            f"reasoning-gym {REASONING_GYM_VERSION} '{info.name}', procedural: train from seeds "
            "[0, 60), eval from [10^9, 10^9 + 60), each kept where its content split agrees"
        ),
        "kwargs": {"dataset": info.name, "max_turns": 1},
        "reward": {"beta": 0.1},
        "rules": dict(RULES),
        "probes": "gymhub.envs.reasoning.probes:PROBES",
    }


REGISTRY_SPECS: list[dict[str, Any]] = [registry_spec(info) for info in DATASETS.values() if info.registered]
