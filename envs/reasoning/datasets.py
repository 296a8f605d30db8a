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

from dataclasses import dataclass, field
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


DRAWS = 60  # seeds drawn per split (train and eval) unless a row draws fewer


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    answer_type: str  # one of gymhub.envs.reasoning.answers.ANSWER_TYPES
    scoring: str = "exact"  # "exact" | "checker"
    left_out: str = ""  # why the dataset is not registered ("" when it is)
    draws: int = DRAWS  # seeds drawn per split: fewer for a dataset that is slow to generate
    config: dict[str, Any] = field(default_factory=dict)  # reasoning-gym config fields set

    @property
    def env_id(self) -> str:
        return f"rg-{self.name}-v0"

    @property
    def registered(self) -> bool:
        return not self.left_out


_SLOW = (
    "generating is slow here (~{} s per 120 items on the 2-core test machine{}): over the "
    "test budget of 3 min for every rg env"
)
FREQUENT = "blind:frequent"  # _blind's `by`: the most frequent train answer
_FLOOR = "blind floor: {} scores {} on a {} sample (the floor is 0.05): the answer space is too small"
_UNSTABLE = (
    "not reproducible: the same seeds give other tasks under another PYTHONHASHSEED "
    "(the generator's output depends on Python's hash seed), so task ids differ between processes"
)
_NO_GOLD = (
    "no gold answer in the generator's output (many valid answers, no reference solution): "
    "the reference-policy check cannot hold"
)
_POLYNOMIAL_EQUATIONS = (
    "blind floor: the constant answer '0' scores 0.4 on a train sample (the floor is 0.05), and "
    "its checker credits the candidates and lookalike hacks"
)
_ANSWER_IN_PROMPT = (
    "check_env: the gold answer is in the prompt on some tasks (an example's output grid is the "
    "test's output)"
)
_PUZZLE24 = (
    "blind floor: blind:frequent (the most frequent train answer) scores 1.0 on a train sample: "
    "its checker accepts any four numbers that make 24, not only the task's"
)
_SOKOBAN = (
    "its checker is not exact: it credits the gold+junk, candidates, prose and lookalike hacks "
    "(measured with a 6x6 board, 4 boxes: the default config is slow to generate)"
)
_EVALS = (
    "unsafe checker: reasoning-gym's scorer parses the answer with sympy's parse_expr, which "
    "runs Python: an answer can execute code in the verifier's process"
)
_COMPOSITE = (
    "a meta-dataset that mixes the others (it needs a list of datasets); "
    "use the RG_MIX preset or GRPOConfig(env={...}) instead"
)


def _ok(name: str, answer_type: str, scoring: str = "exact", **fewer: Any) -> DatasetInfo:
    """A registered dataset (``fewer``: ``draws=``/``config=`` for one slow to generate)."""
    return DatasetInfo(name, answer_type, scoring, **fewer)


def _out(name: str, answer_type: str, reason: str, scoring: str = "exact") -> DatasetInfo:
    return DatasetInfo(name, answer_type, scoring, left_out=reason)


def _blind(
    name: str, answer_type: str, by: str, mean: float, split: str, scoring: str = "exact"
) -> DatasetInfo:
    """Left out: the blind policy ``by`` (a constant answer, or FREQUENT) beats the floor."""
    who = f"{FREQUENT} (the most frequent train answer)" if by == FREQUENT else f"the constant answer {by!r}"
    return _out(name, answer_type, _FLOOR.format(who, mean, split), scoring)


def _slow(name: str, answer_type: str, seconds: int, why: str = "", scoring: str = "exact") -> DatasetInfo:
    """Left out: too slow to generate even with fewer draws (``why``: what was tried)."""
    return _out(name, answer_type, _SLOW.format(seconds, why), scoring)


_ROWS: list[DatasetInfo] = [
    _ok("ab", "list"),
    _blind("acre", "word", FREQUENT, 0.50, "train"),
    _ok("advanced_geometry", "text"),
    _blind("aiw", "integer", FREQUENT, 0.31, "eval"),
    _ok("arc_1d", "list"),
    _out("arc_agi", "grid", _ANSWER_IN_PROMPT),
    _ok("base_conversion", "word"),
    _blind("basic_arithmetic", "integer", "0", 0.09, "eval"),
    _ok("bf", "word"),
    _blind("binary_alternation", "integer", "1", 0.06, "eval"),
    _ok("binary_matrix", "grid"),
    _ok("bitwise_arithmetic", "word"),
    _out("boxnet", "text", _NO_GOLD, scoring="checker"),
    _ok("caesar_cipher", "word"),
    _blind("calendar_arithmetic", "word", "no", 0.08, "eval"),
    _ok("chain_sum", "integer"),
    _blind("circuit_logic", "integer", "0", 0.55, "train"),
    _out("codeio", "structure", _UNSTABLE),
    _ok("coin_flip", "number"),
    _blind("color_cube_rotation", "word", FREQUENT, 0.20, "train"),
    _ok("complex_arithmetic", "expression"),
    _out("composite", "text", _COMPOSITE),
    _blind("count_bits", "integer", FREQUENT, 0.08, "eval"),
    _ok("count_primes", "integer"),
    _out("countdown", "expression", _EVALS, scoring="checker"),
    _blind("course_schedule", "word", "True", 0.5, "train"),
    _ok("cryptarithm", "set"),
    _ok("decimal_arithmetic", "number"),
    _ok("decimal_chain_sum", "number"),
    _blind("dice", "number", FREQUENT, 0.10, "train"),
    _ok("emoji_mystery", "text"),
    _blind("family_relationships", "word", FREQUENT, 0.06, "eval"),
    _ok("figlet_font", "word"),
    _ok("fraction_simplification", "word"),
    _ok("futoshiki", "grid", config={"max_board_size": 5}),  # boards up to 9x9: ~160 s per 120
    _ok("game_of_life", "structure", config={"filled_cells": 30}),  # 10: an all-dead grid is frequent
    _blind("game_of_life_halting", "word", "True", 0.3, "train"),
    _blind("gcd", "integer", "1", 0.15, "train"),
    _out("graph_color", "text", _NO_GOLD, scoring="checker"),
    _ok("group_anagrams", "structure", scoring="checker"),
    _blind("gsm_symbolic", "integer", FREQUENT, 0.15, "train"),
    _out("intermediate_integration", "expression", _UNSTABLE, scoring="checker"),
    _blind("isomorphic_strings", "word", "True", 0.65, "train"),
    _ok("jugs", "structure", scoring="checker"),
    _ok("kakurasu", "grid"),
    _slow("knight_swap", "structure", 700, "; 40 items with max_steps 8 still took over 10 min"),
    _ok("knights_knaves", "text"),
    _blind("largest_island", "integer", "0", 0.3, "train"),
    _ok("lcm", "integer"),
    _ok("leg_counting", "integer"),
    _blind("letter_counting", "integer", "1", 0.4, "train"),
    _ok("letter_jumble", "text"),
    _out("list_functions", "structure", _UNSTABLE),
    _blind("mahjong_puzzle", "word", FREQUENT, 0.45, "train"),
    _ok("manipulate_matrix", "grid"),
    _blind("maze", "integer", FREQUENT, 0.20, "eval"),
    _ok("mini_sudoku", "grid"),
    _ok("modulo_grid", "grid"),
    _ok("n_queens", "grid", scoring="checker"),
    _ok("needle_haystack", "word"),
    _ok("number_filtering", "list"),
    _ok("number_format", "number"),
    _blind("number_sequence", "integer", "0", 0.1, "train"),
    _ok("number_sorting", "list"),
    _ok("palindrome_generation", "word", scoring="checker"),
    _ok("palindrome_partitioning", "structure", scoring="checker"),
    _ok("path_star", "list"),
    _out("polynomial_equations", "set", _POLYNOMIAL_EQUATIONS, scoring="checker"),
    _out("polynomial_multiplication", "expression", _UNSTABLE, scoring="checker"),
    _ok("pool_matrix", "grid"),
    _blind("power_function", "number", "1", 0.1, "train"),
    _ok("prime_factorization", "expression"),
    _blind("products", "integer", "0", 0.1, "train"),
    _out("propositional_logic", "text", _NO_GOLD, scoring="checker"),
    _out("puzzle24", "expression", _PUZZLE24, scoring="checker"),
    _ok("quantum_lock", "text"),
    _blind("ransom_note", "word", "True", 0.7, "train"),
    _ok("rearc", "grid"),
    _blind("rectangle_count", "integer", "1", 0.15, "train"),
    _ok("rotate_matrix", "grid"),
    _blind("rotten_oranges", "integer", FREQUENT, 0.30, "train"),
    _out("rubiks_cube", "text", _NO_GOLD, scoring="checker"),
    _out("rush_hour", "text", _NO_GOLD, scoring="checker"),
    _blind("self_reference", "integer", FREQUENT, 0.40, "train"),
    _ok("sentence_reordering", "text"),
    _blind("shortest_path", "text", FREQUENT, 0.40, "train", scoring="checker"),
    _blind("simple_equations", "integer", "1", 0.12, "eval"),
    _ok("simple_geometry", "integer"),
    _out("simple_integration", "expression", _EVALS, scoring="checker"),
    _out("sokoban", "word", _SOKOBAN, scoring="checker"),
    _ok("spell_backward", "word"),
    _ok("spiral_matrix", "list"),
    _ok("string_insertion", "word"),
    _ok("string_manipulation", "word"),
    _ok("string_splitting", "list"),
    _ok("string_synthesis", "list"),
    _ok("sudoku", "grid"),
    _ok("survo", "grid"),
    _blind("syllogism", "word", "yes", 0.85, "train"),
    _ok("time_intervals", "word"),
    _ok("tower_of_hanoi", "grid", scoring="checker"),
    _ok("tsumego", "word"),
    _out("word_ladder", "list", _UNSTABLE, scoring="checker"),
    _ok("word_sequence_reversal", "list"),
    _ok("word_sorting", "list"),
    _blind("zebra_puzzles", "word", FREQUENT, 0.30, "train"),
]
DATASETS: dict[str, DatasetInfo] = {info.name: info for info in sorted(_ROWS, key=lambda info: info.name)}


def registry_spec(info: DatasetInfo) -> dict[str, Any]:
    how = "exact match after canonical normalisation" if info.scoring == "exact" else "its exact checker"
    config = f" with {info.config}" if info.config else ""
    return {
        "id": info.env_id,
        "entry_point": "gymhub.envs.reasoning.env:ReasoningEnv",
        "family": FAMILY,
        "description": f"reasoning-gym {info.name}: one <answer>; {info.answer_type} answers, {how}.",
        "version": "0.1.0",
        "sandbox": "none",
        "verifier": "reasoning-answer",
        "task_set": (
            f"reasoning-gym {REASONING_GYM_VERSION} '{info.name}'{config}, procedural: train from seeds "
            f"[0, {info.draws}), eval from [10^9, 10^9 + {info.draws}), each kept where its content "
            "split agrees"
        ),
        "kwargs": {"dataset": info.name, "max_turns": 1},
        "reward": {"beta": 0.1},
        "rules": dict(RULES),
        "probes": "gymhub.envs.reasoning.probes:PROBES",
    }


REGISTRY_SPECS: list[dict[str, Any]] = [registry_spec(info) for info in DATASETS.values() if info.registered]
