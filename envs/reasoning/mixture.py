"""``RG_MIX``: a preset GRPO mixture over a balanced set of rg envs.

Two or so datasets per answer type (integers, decimals and fractions, lists and sets, grids,
words, expressions, structures, text, and two scored by their exact checker), equal weights,
all cheap to generate. Use it as ``GRPOConfig(env=RG_MIX)`` (``trainers/grpo.py`` takes a
``{env_id: weight}`` mixture); docs/envs/reasoning.md lists it.
"""

from __future__ import annotations

RG_MIX_DATASETS: tuple[str, ...] = (
    "leg_counting",  # integer
    "count_primes",  # integer
    "decimal_arithmetic",  # number
    "coin_flip",  # number (fractions)
    "number_sorting",  # list
    "cryptarithm",  # set
    "binary_matrix",  # grid
    "rotate_matrix",  # grid
    "spell_backward",  # word
    "base_conversion",  # word
    "complex_arithmetic",  # expression
    "group_anagrams",  # structure (checker: groups in any order)
    "knights_knaves",  # text
    "n_queens",  # checker (many valid boards)
    "palindrome_generation",  # checker (many palindromes)
)
RG_MIX: dict[str, float] = {f"rg-{name}-v0": 1.0 / len(RG_MIX_DATASETS) for name in RG_MIX_DATASETS}
