"""Task templates for the code family: a typed spec, a reference solution and an input generator.

Each template is instantiated with several parameter sets (its variants). ``$name`` in the
signature and description is replaced by the variant's value; the reference solution is a real
function of :mod:`references` whose upper-case parameter names (``K`` for ``k``) are replaced by
the variant's values when its source is rendered (:func:`render_reference`). Inputs come from a
seeded ``random.Random``, so the task set is the same on every machine.
"""

from __future__ import annotations

import inspect
import io
import random
import string
import tokenize
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from gymhub.envs.code import references

Inputs = Callable[[random.Random, dict[str, Any]], list[list[Any]]]
Reference = Callable[..., Any]
INPUTS_PER_VARIANT = 16


class Template(BaseModel):
    """One task family and its variants.

    ``difficulty`` is 1 (a one-liner), 2 (a loop or two) or 3 (edge cases that trip people up).
    ``params`` holds each variant's values: ``$key`` in the signature and description, ``KEY`` in
    the reference. ``reference`` is one function of :mod:`references` for every variant, or one per
    variant where the variants differ by an expression rather than a value; it is renamed to
    ``name``, the entry point, when rendered. ``inputs`` draws a variant's test inputs.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    difficulty: Literal[1, 2, 3]
    signature: str
    description: str
    reference: Reference | list[Reference]
    params: list[dict[str, Any]]
    inputs: Inputs

    @model_validator(mode="after")
    def _one_reference_per_variant(self) -> Template:
        if isinstance(self.reference, list) and len(self.reference) != len(self.params):
            raise ValueError(f"{self.name}: {len(self.reference)} references for {len(self.params)} variants")
        return self

    def reference_source(self, variant: int) -> str:
        """The reference solution of one variant, as the source a task ships."""
        function = self.reference[variant] if isinstance(self.reference, list) else self.reference
        return render_reference(function, self.name, self.params[variant])

    def signature_of(self, variant: int) -> str:
        return _fill(self.signature, self.params[variant])

    def description_of(self, variant: int) -> str:
        return _fill(self.description, self.params[variant])


def render_reference(function: Reference, entry: str, values: Mapping[str, Any]) -> str:
    """``function``'s source with each parameter name (a value's key, upper-cased) replaced by the
    value's literal and the function's own name by ``entry``. Only names are replaced, never a
    string's text or an attribute (``x.K``), and in place, so the layout stays as written."""
    source = inspect.getsource(function)
    replacements = {key.upper(): repr(value) for key, value in values.items()}
    replacements[function.__name__] = entry
    line_starts = [0]
    for line in io.StringIO(source).readlines():
        line_starts.append(line_starts[-1] + len(line))
    edits: list[tuple[int, int, str]] = []
    previous = ""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.string in replacements and previous != ".":
            (start_row, start_col), (end_row, end_col) = token.start, token.end
            start, end = line_starts[start_row - 1] + start_col, line_starts[end_row - 1] + end_col
            edits.append((start, end, replacements[token.string]))
        if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous = token.string
    for start, end, text in reversed(edits):
        source = source[:start] + text + source[end:]
    return source


def _fill(text: str, values: Mapping[str, Any]) -> str:
    """Prose with ``$key`` placeholders filled; a string value shows its escapes (a tab as ``\\t``),
    as the reference writes it."""
    shown = {
        k: v.encode("unicode_escape").decode() if isinstance(v, str) else str(v) for k, v in values.items()
    }
    return string.Template(text).substitute(shown)


def _ints(rng: random.Random, n: int = 8, lo: int = -20, hi: int = 20) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(rng.randint(0, n))]


def _words(rng: random.Random, n: int = 6) -> str:
    vocab = [
        "apple",
        "Echo",
        "kayak",
        "zebra",
        "Moon",
        "tree",
        "level",
        "queue",
        "Idea",
        "sky",
        "rhythm",
        "banana",
        "Otto",
        "civic",
        "lamp",
    ]
    return " ".join(rng.choice(vocab) for _ in range(rng.randint(0, n)))


def _text(rng: random.Random, n: int = 24) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCXYZ ,.!"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))


_SEPARATORS = {"snake_case": "_", "kebab-case": "-", "dot.case": "."}


def _one(gen: Callable[[random.Random], Any]) -> Inputs:
    return lambda rng, p: [[gen(rng)] for _ in range(INPUTS_PER_VARIANT)]


# variants that differ by an expression: what the prompt says of each, and its reference
_RUNNING_OPS = (
    ("sum", references.running_sum),
    ("maximum", references.running_max),
    ("minimum", references.running_min),
    ("product", references.running_product),
    ("difference", references.running_difference),
    ("bitwise or", references.running_or),
    ("bitwise xor", references.running_xor),
    ("bitwise and", references.running_and),
)
_WORD_STATS = (
    ("number of words", "int", references.word_stat_count),
    ("longest word (the first one on ties), or '' if there are none", "str", references.word_stat_longest),
    ("list of word lengths", "list[int]", references.word_stat_lengths),
    ("words in reverse order, joined by single spaces", "str", references.word_stat_reversed),
    ("number of distinct words, ignoring case", "int", references.word_stat_distinct),
    ("words that are palindromes ignoring case, in order", "list[str]", references.word_stat_palindromes),
    ("words sorted case-insensitively (stable)", "list[str]", references.word_stat_sorted),
    ("first letter of each word, uppercased, joined", "str", references.word_stat_initials),
)
_CASE_CONVERSIONS = (  # the source case's separator is the reference's SEPARATOR
    ("snake_case", "camelCase", references.to_camel_case),
    ("snake_case", "PascalCase", references.to_pascal_case),
    ("snake_case", "kebab-case", references.to_kebab_case),
    ("snake_case", "UPPER_SNAKE_CASE", references.to_upper_snake_case),
    ("kebab-case", "snake_case", references.to_snake_case),
    ("kebab-case", "camelCase", references.to_camel_case),
    ("dot.case", "snake_case", references.to_snake_case),
    ("dot.case", "Title Case", references.to_title_case),
)
_BIT_STATS = (
    ("number of 1 bits", references.bits_ones),
    ("number of 0 bits in its binary form (0 has one)", references.bits_zeros),
    ("position of the lowest set bit (0-based), or -1 for 0", references.bits_lowest_set),
    ("number of bits needed to write it (0 needs 0)", references.bits_length),
    ("value with its binary digits reversed", references.bits_reversed),
    ("parity of its 1 bits (1 if odd)", references.bits_parity),
    ("largest power of two <= n, or 0 for 0", references.bits_highest_power),
    ("length of the longest run of 1 bits", references.bits_longest_run),
)
_RUN_MERGES = (
    ("exactly (case-sensitive)", references.run_length_exact),
    ("ignoring case (use the lowercase letter)", references.run_length_ignore_case),
)

TEMPLATES: list[Template] = [
    Template(
        name="sum_powers",
        difficulty=1,
        signature="sum_powers(nums: list[int]) -> int",
        description="Return the sum of each number raised to the power $k.",
        reference=references.sum_powers,
        params=[{"k": k} for k in range(1, 13)],
        inputs=_one(_ints),
    ),
    Template(
        name="count_multiples",
        difficulty=1,
        signature="count_multiples(nums: list[int]) -> int",
        description="Return how many numbers in the list are divisible by $k (0 counts).",
        reference=references.count_multiples,
        params=[{"k": k} for k in range(2, 14)],
        inputs=_one(_ints),
    ),
    Template(
        name="rotate_left",
        difficulty=2,
        signature="rotate_left(items: list[int]) -> list[int]",
        description="Rotate the list left by $k positions (wrapping around); an empty list stays empty.",
        reference=references.rotate_left,
        params=[{"k": k} for k in range(1, 13)],
        inputs=_one(_ints),
    ),
    Template(
        name="caesar",
        difficulty=2,
        signature="caesar(text: str) -> str",
        description="Shift every ASCII letter forward by $k places in the alphabet, wrapping around and "
        "keeping its case; leave other characters unchanged.",
        reference=references.caesar,
        params=[{"k": k} for k in (1, 2, 3, 4, 5, 7, 9, 11, 13, 17, 19, 25)],
        inputs=_one(_text),
    ),
    Template(
        name="every_nth",
        difficulty=1,
        signature="every_nth(items: list[int]) -> list[int]",
        description="Return every $k-th element of the list, starting with the first element.",
        reference=references.every_nth,
        params=[{"k": k} for k in range(2, 14)],
        inputs=_one(lambda r: _ints(r, 14)),
    ),
    Template(
        name="clamp_all",
        difficulty=1,
        signature="clamp_all(nums: list[int]) -> list[int]",
        description="Clamp every number into the closed range [$lo, $hi].",
        reference=references.clamp_all,
        params=[
            {"lo": lo, "hi": lo + w}
            for lo, w in (
                (-5, 5),
                (-10, 3),
                (0, 7),
                (2, 9),
                (-3, 1),
                (-8, 12),
                (1, 2),
                (-15, 20),
                (-1, 1),
                (4, 4),
                (-20, 5),
                (-6, 16),
            )
        ],
        inputs=_one(_ints),
    ),
    Template(
        name="count_chars",
        difficulty=1,
        signature="count_chars(text: str) -> int",
        description="Return how many characters of the text are in the set '$chars' (case-sensitive).",
        reference=references.count_chars,
        params=[
            {"chars": c}
            for c in ("aeiou", "xyz", "abc", "AEIOU", "aA", " ", ".!,", "zZ", "XYZ", "bcd", "!", "mnop")
        ],
        inputs=_one(_text),
    ),
    Template(
        name="fizz_words",
        difficulty=2,
        signature="fizz_words(n: int) -> list[str]",
        description="Return a list for the numbers 1..n: '$fizz' for multiples of $fizz_every, "
        "'$buzz' for multiples of $buzz_every, '$fizz$buzz' for multiples of both, else the number "
        "as a string.",
        reference=references.fizz_words,
        params=[
            {"fizz": fizz, "buzz": buzz, "fizz_every": x, "buzz_every": y}
            for fizz, buzz, x, y in (
                ("Fizz", "Buzz", 3, 5),
                ("Foo", "Bar", 2, 3),
                ("Ping", "Pong", 4, 6),
                ("Hip", "Hop", 3, 7),
                ("Tic", "Tac", 2, 5),
                ("Up", "Down", 5, 8),
                ("Red", "Blue", 3, 4),
                ("Yin", "Yang", 6, 9),
                ("Sun", "Moon", 2, 7),
                ("Bip", "Bop", 4, 5),
                ("Ho", "Hum", 3, 8),
                ("Zig", "Zag", 5, 6),
            )
        ],
        inputs=_one(lambda r: r.randint(0, 30)),
    ),
    Template(
        name="digit_sum_base",
        difficulty=2,
        signature="digit_sum_base(n: int) -> int",
        description="Return the sum of the digits of the non-negative integer n written in base $k.",
        reference=references.digit_sum_base,
        params=[{"k": k} for k in (2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16)],
        inputs=_one(lambda r: r.randint(0, 10**6)),
    ),
    Template(
        name="nth_largest_distinct",
        difficulty=3,
        signature="nth_largest_distinct(nums: list[int]) -> int | None",
        description="Return the $k-th largest distinct value of the list (1 = largest), or None if there "
        "are fewer than $k distinct values.",
        reference=references.nth_largest_distinct,
        params=[{"k": k} for k in range(1, 13)],
        inputs=_one(lambda r: _ints(r, 12, -5, 5)),
    ),
    Template(
        name="chunk",
        difficulty=1,
        signature="chunk(items: list[int]) -> list[list[int]]",
        description="Split the list into consecutive chunks of $k elements; the last chunk may be shorter.",
        reference=references.chunk,
        params=[{"k": k} for k in range(1, 13)],
        inputs=_one(lambda r: _ints(r, 15)),
    ),
    Template(
        name="running_op",
        difficulty=2,
        signature="running_op(nums: list[int]) -> list[int]",
        description="Return the running $label of the list: element i is the $label of nums[0..i].",
        params=[{"label": label} for label, _ in _RUNNING_OPS],
        reference=[function for _, function in _RUNNING_OPS],
        inputs=_one(lambda r: _ints(r, 8, -6, 6)),
    ),
    Template(
        name="dedupe_keep",
        difficulty=3,
        signature="dedupe_keep(items: list[int]) -> list[int]",
        description="Remove duplicates, keeping the $which occurrence of each value, and otherwise "
        "preserving order.",
        reference=references.dedupe_keep,
        params=[{"which": w} for w in ("first", "last")],
        inputs=_one(lambda r: _ints(r, 12, -4, 4)),
    ),
    Template(
        name="collatz_steps",
        difficulty=3,
        signature="collatz_steps(n: int) -> int",
        description="Starting from n >= 1, repeat: if even halve it, else replace it by "
        "$multiplier*n+1. Return the number of steps to reach 1, or -1 if 1 is not reached within "
        "$max_steps steps.",
        reference=references.collatz_steps,
        params=[{"multiplier": m, "max_steps": c} for m in (1, 3) for c in (10, 50, 100, 1000)],
        inputs=_one(lambda r: r.randint(1, 200)),
    ),
    Template(
        name="to_base",
        difficulty=2,
        signature="to_base(n: int) -> str",
        description="Return the non-negative integer n written in base $k using digits "
        "0-9 then lowercase letters; 0 is '0'.",
        reference=references.to_base,
        params=[{"k": k} for k in (2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 20, 36)],
        inputs=_one(lambda r: r.randint(0, 10**5)),
    ),
    Template(
        name="word_stat",
        difficulty=2,
        signature="word_stat(text: str) -> $rtype",
        description="Split the text on whitespace and return the $what.",
        params=[{"what": what, "rtype": rtype} for what, rtype, _ in _WORD_STATS],
        reference=[function for _, _, function in _WORD_STATS],
        inputs=_one(_words),
    ),
    Template(
        name="transpose",
        difficulty=1,
        signature="transpose(matrix: list[list[int]]) -> list[list[int]]",
        description="Return the transpose of a rectangular matrix with $rows rows (rows become columns).",
        reference=references.transpose,
        params=[{"rows": r} for r in range(1, 13)],
        inputs=lambda rng, p: [
            [[[rng.randint(-9, 9) for _ in range(w)] for _ in range(p["rows"])]]
            for w in (rng.randint(1, 5) for _ in range(INPUTS_PER_VARIANT))
        ],
    ),
    Template(
        name="pair_count",
        difficulty=2,
        signature="pair_count(nums: list[int]) -> int",
        description="Return the number of index pairs i < j with nums[i] + nums[j] == $target.",
        reference=references.pair_count,
        params=[{"target": t} for t in (-6, -4, -2, -1, 0, 1, 2, 3, 4, 5, 7, 10)],
        inputs=_one(lambda r: _ints(r, 10, -6, 8)),
    ),
    Template(
        name="balanced",
        difficulty=3,
        signature="balanced(text: str) -> bool",
        description="Return True if the brackets $pairs in the text are balanced and properly nested "
        "(other characters are ignored).",
        reference=references.balanced,
        params=[
            {"pairs": " ".join(o + c for o, c in zip(op, cl, strict=True)), "openers": op, "closers": cl}
            for op, cl in (
                ("(", ")"),
                ("[", "]"),
                ("{", "}"),
                ("<", ">"),
                ("([", ")]"),
                ("({", ")}"),
                ("[<", "]>"),
                ("([{", ")]}"),
            )
        ],
        inputs=_one(lambda r: "".join(r.choice("()[]{}<>ab") for _ in range(r.randint(0, 12)))),
    ),
    Template(
        name="interleave",
        difficulty=3,
        signature="interleave(a: str, b: str) -> str",
        description="Interleave the two strings $step character(s) at a time, starting with a; append "
        "whatever remains of the longer string.",
        reference=references.interleave,
        params=[{"step": n} for n in range(1, 13)],
        inputs=lambda rng, p: [[_text(rng, 10), _text(rng, 10)] for _ in range(INPUTS_PER_VARIANT)],
    ),
    Template(
        name="fib_mod",
        difficulty=2,
        signature="fib_mod(n: int) -> int",
        description="Return F(n) modulo $modulus, where F(0) = 0, F(1) = 1 and F(n) = F(n-1) + F(n-2).",
        reference=references.fib_mod,
        params=[{"modulus": m} for m in (2, 3, 7, 10, 11, 97, 100, 101, 1000, 9973, 10007, 65536)],
        inputs=_one(lambda r: r.randint(0, 500)),
    ),
    Template(
        name="case_convert",
        difficulty=2,
        signature="case_convert(name: str) -> str",
        description="Convert a $src identifier to $dst.",
        params=[{"src": src, "dst": dst, "separator": _SEPARATORS[src]} for src, dst, _ in _CASE_CONVERSIONS],
        reference=[function for _, _, function in _CASE_CONVERSIONS],
        inputs=lambda rng, p: [
            [
                _SEPARATORS[p["src"]].join(
                    rng.choice(["user", "id", "max", "http", "x", "value", "a", "list"])
                    for _ in range(rng.randint(1, 4))
                )
            ]
            for _ in range(INPUTS_PER_VARIANT)
        ],
    ),
    Template(
        name="product_except",
        difficulty=3,
        signature="product_except(nums: list[int]) -> list[int]",
        description="Return a list where element i is the product of all numbers except nums[i], "
        "taken modulo $modulus (Python's % semantics).",
        reference=references.product_except,
        params=[{"modulus": m} for m in (5, 7, 10, 11, 13, 17, 100, 101, 997, 1000, 10007, 10**9 + 7)],
        inputs=_one(lambda r: _ints(r, 7, -9, 9)),
    ),
    Template(
        name="bits",
        difficulty=2,
        signature="bits(n: int) -> int",
        description="For the non-negative integer n, return the $what.",
        params=[{"what": what} for what, _ in _BIT_STATS],
        reference=[function for _, function in _BIT_STATS],
        inputs=_one(lambda r: r.randint(0, 5000)),
    ),
    Template(
        name="run_length",
        difficulty=3,
        signature="run_length(text: str) -> list[list]",
        description="Run-length encode the text as a list of [character, count] pairs, merging runs $how.",
        params=[{"how": how} for how, _ in _RUN_MERGES],
        reference=[function for _, function in _RUN_MERGES],
        inputs=_one(lambda r: "".join(r.choice("aabbbcA ") for _ in range(r.randint(0, 14)))),
    ),
    Template(
        name="triangle_sum",
        difficulty=1,
        signature="triangle_sum(n: int) -> int",
        description="Return the sum of every $k-th integer from 0 up to and including n (0, $k, 2*$k, ...).",
        reference=references.triangle_sum,
        params=[{"k": k} for k in range(1, 13)],
        inputs=_one(lambda r: r.randint(0, 1000)),
    ),
    Template(
        name="mode_value",
        difficulty=3,
        signature="mode_value(nums: list[int]) -> int | None",
        description="Return the most frequent value; on ties return the $tie of the tied values; "
        "None for an empty list.",
        params=[{"tie": "min"}, {"tie": "max"}],
        reference=[references.mode_value_min, references.mode_value_max],
        inputs=_one(lambda r: _ints(r, 10, -3, 3)),
    ),
    Template(
        name="histogram",
        difficulty=2,
        signature="histogram(nums: list[int]) -> dict[str, int]",
        description="Return a dict mapping each bucket label to its count, where a number x falls in "
        "bucket str(x // $width * $width). Empty buckets are left out.",
        reference=references.histogram,
        params=[{"width": w} for w in range(2, 14)],
        inputs=_one(_ints),
    ),
    Template(
        name="pad_table",
        difficulty=3,
        signature="pad_table(rows: list[list[str]]) -> list[str]",
        description="Left-justify every cell to the width of the widest cell in its column and join "
        "the cells of each row with '$sep'; return the lines (rows have equal length).",
        reference=references.pad_table,
        params=[{"sep": s} for s in (" | ", ",", " ", "\t", ";", " :: ", "|", " - ")],
        inputs=lambda rng, p: [
            [
                [
                    [rng.choice(["a", "bb", "ccc", "", "dddd"]) for _ in range(c)]
                    for _ in range(rng.randint(0, 4))
                ]
            ]
            for c in (rng.randint(1, 3) for _ in range(INPUTS_PER_VARIANT))
        ],
    ),
    Template(
        name="window_sums",
        difficulty=2,
        signature="window_sums(nums: list[int]) -> list[int]",
        description="Return the sums of all contiguous windows of length $k, in order (empty if the list "
        "is shorter than $k).",
        reference=references.window_sums,
        params=[{"k": k} for k in range(1, 13)],
        inputs=_one(lambda r: _ints(r, 12)),
    ),
    Template(
        name="count_longer",
        difficulty=1,
        signature="count_longer(text: str) -> int",
        description="Return how many whitespace-separated words of the text have more than $k characters.",
        reference=references.count_longer,
        params=[{"k": k} for k in range(0, 6)],
        inputs=_one(_words),
    ),
    Template(
        name="starting_with",
        difficulty=2,
        signature="starting_with(text: str) -> list[str]",
        description="Return the whitespace-separated words of the text that start with the letter "
        "'$letter', ignoring case, in their original order and spelling.",
        reference=references.starting_with,
        params=[{"letter": c} for c in "aekzmtlqisrb"],
        inputs=_one(_words),
    ),
]
