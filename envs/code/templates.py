"""Task templates for the code family: a spec, a reference solution and an input generator.

Each template is instantiated with several parameter sets; ``$name`` in the description and
the reference source is replaced by the parameter's value. Inputs come from a seeded
``random.Random``, so the task set is the same on every machine.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Inputs = Callable[[random.Random, dict[str, Any]], list[list[Any]]]


@dataclass(frozen=True)
class Template:
    """One task family. ``difficulty`` is 1 (a one-liner), 2 (a loop) or 3 (care with edge cases)."""

    name: str
    signature: str
    description: str
    reference: str
    params: list[dict[str, Any]]
    inputs: Inputs

    @property
    def difficulty(self) -> int:
        return DIFFICULTY.get(self.name, 2)


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
    return lambda rng, p: [[gen(rng)] for _ in range(16)]


def _with_k(gen: Callable[[random.Random], Any], lo: int, hi: int) -> Inputs:
    return lambda rng, p: [[gen(rng), rng.randint(lo, hi)] for _ in range(16)]


# 1: a one-liner; 2: a loop or two; 3: edge cases that trip people up
DIFFICULTY = {
    "sum_powers": 1,
    "count_multiples": 1,
    "every_nth": 1,
    "clamp_all": 1,
    "count_chars": 1,
    "triangle_sum": 1,
    "chunk": 1,
    "transpose": 1,
    "rotate_left": 2,
    "caesar": 2,
    "fizz_words": 2,
    "digit_sum_base": 2,
    "running_op": 2,
    "to_base": 2,
    "word_stat": 2,
    "pair_count": 2,
    "fib_mod": 2,
    "bits": 2,
    "histogram": 2,
    "window_sums": 2,
    "case_convert": 2,
    "nth_largest_distinct": 3,
    "dedupe_keep": 3,
    "collatz_steps": 3,
    "balanced": 3,
    "count_longer": 1,
    "starting_with": 2,
    "interleave": 3,
    "product_except": 3,
    "run_length": 3,
    "mode_value": 3,
    "pad_table": 3,
}

TEMPLATES: list[Template] = [
    Template(
        "sum_powers",
        "sum_powers(nums: list[int]) -> int",
        "Return the sum of each number raised to the power $k.",
        "def sum_powers(nums):\n    return sum(x ** $k for x in nums)\n",
        [{"k": k} for k in range(1, 13)],
        _one(_ints),
    ),
    Template(
        "count_multiples",
        "count_multiples(nums: list[int]) -> int",
        "Return how many numbers in the list are divisible by $k (0 counts).",
        "def count_multiples(nums):\n    return sum(1 for x in nums if x % $k == 0)\n",
        [{"k": k} for k in range(2, 14)],
        _one(_ints),
    ),
    Template(
        "rotate_left",
        "rotate_left(items: list[int]) -> list[int]",
        "Rotate the list left by $k positions (wrapping around); an empty list stays empty.",
        "def rotate_left(items):\n    if not items:\n        return []\n"
        "    k = $k % len(items)\n    return items[k:] + items[:k]\n",
        [{"k": k} for k in range(1, 13)],
        _one(_ints),
    ),
    Template(
        "caesar",
        "caesar(text: str) -> str",
        "Shift every ASCII letter forward by $k places in the alphabet, wrapping around and "
        "keeping its case; leave other characters unchanged.",
        "def caesar(text):\n    out = []\n    for c in text:\n"
        "        if 'a' <= c <= 'z':\n            out.append(chr((ord(c) - 97 + $k) % 26 + 97))\n"
        "        elif 'A' <= c <= 'Z':\n            out.append(chr((ord(c) - 65 + $k) % 26 + 65))\n"
        "        else:\n            out.append(c)\n    return ''.join(out)\n",
        [{"k": k} for k in (1, 2, 3, 4, 5, 7, 9, 11, 13, 17, 19, 25)],
        _one(_text),
    ),
    Template(
        "every_nth",
        "every_nth(items: list[int]) -> list[int]",
        "Return every $k-th element of the list, starting with the first element.",
        "def every_nth(items):\n    return items[::$k]\n",
        [{"k": k} for k in range(2, 14)],
        _one(lambda r: _ints(r, 14)),
    ),
    Template(
        "clamp_all",
        "clamp_all(nums: list[int]) -> list[int]",
        "Clamp every number into the closed range [$lo, $hi].",
        "def clamp_all(nums):\n    return [min(max(x, $lo), $hi) for x in nums]\n",
        [
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
        _one(_ints),
    ),
    Template(
        "count_chars",
        "count_chars(text: str) -> int",
        "Return how many characters of the text are in the set '$chars' (case-sensitive).",
        "def count_chars(text):\n    return sum(1 for c in text if c in '$chars')\n",
        [
            {"chars": c}
            for c in ("aeiou", "xyz", "abc", "AEIOU", "aA", " ", ".!,", "zZ", "XYZ", "bcd", "!", "mnop")
        ],
        _one(_text),
    ),
    Template(
        "fizz_words",
        "fizz_words(n: int) -> list[str]",
        "Return a list for the numbers 1..n: '$a' for multiples of $x, '$b' for multiples "
        "of $y, '$a$b' for multiples of both, else the number as a string.",
        "def fizz_words(n):\n    out = []\n    for i in range(1, n + 1):\n"
        "        s = ('$a' if i % $x == 0 else '') + ('$b' if i % $y == 0 else '')\n"
        "        out.append(s or str(i))\n    return out\n",
        [
            {"a": a, "b": b, "x": x, "y": y}
            for a, b, x, y in (
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
        _one(lambda r: r.randint(0, 30)),
    ),
    Template(
        "digit_sum_base",
        "digit_sum_base(n: int) -> int",
        "Return the sum of the digits of the non-negative integer n written in base $k.",
        "def digit_sum_base(n):\n    total = 0\n    while n:\n        total += n % $k\n"
        "        n //= $k\n    return total\n",
        [{"k": k} for k in (2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16)],
        _one(lambda r: r.randint(0, 10**6)),
    ),
    Template(
        "nth_largest_distinct",
        "nth_largest_distinct(nums: list[int]) -> int | None",
        "Return the $k-th largest distinct value of the list (1 = largest), or None if there "
        "are fewer than $k distinct values.",
        "def nth_largest_distinct(nums):\n    values = sorted(set(nums), reverse=True)\n"
        "    return values[$k - 1] if len(values) >= $k else None\n",
        [{"k": k} for k in range(1, 13)],
        _one(lambda r: _ints(r, 12, -5, 5)),
    ),
    Template(
        "chunk",
        "chunk(items: list[int]) -> list[list[int]]",
        "Split the list into consecutive chunks of $k elements; the last chunk may be shorter.",
        "def chunk(items):\n    return [items[i:i + $k] for i in range(0, len(items), $k)]\n",
        [{"k": k} for k in range(1, 13)],
        _one(lambda r: _ints(r, 15)),
    ),
    Template(
        "running_op",
        "running_op(nums: list[int]) -> list[int]",
        "Return the running $label of the list: element i is the $label of nums[0..i].",
        "def running_op(nums):\n    out = []\n    for x in nums:\n"
        "        out.append(x if not out else $expr)\n    return out\n",
        [
            {"label": lab, "expr": e}
            for lab, e in (
                ("sum", "out[-1] + x"),
                ("maximum", "max(out[-1], x)"),
                ("minimum", "min(out[-1], x)"),
                ("product", "out[-1] * x"),
                ("difference", "out[-1] - x"),
                ("bitwise or", "out[-1] | x"),
                ("bitwise xor", "out[-1] ^ x"),
                ("bitwise and", "out[-1] & x"),
            )
        ],
        _one(lambda r: _ints(r, 8, -6, 6)),
    ),
    Template(
        "dedupe_keep",
        "dedupe_keep(items: list[int]) -> list[int]",
        "Remove duplicates, keeping the $which occurrence of each value, and otherwise preserving order.",
        "def dedupe_keep(items):\n    seq = items if '$which' == 'first' else items[::-1]\n"
        "    seen, out = set(), []\n    for x in seq:\n        if x not in seen:\n"
        "            seen.add(x)\n            out.append(x)\n"
        "    return out if '$which' == 'first' else out[::-1]\n",
        [{"which": w} for w in ("first", "last")],
        _one(lambda r: _ints(r, 12, -4, 4)),
    ),
    Template(
        "collatz_steps",
        "collatz_steps(n: int) -> int",
        "Starting from n >= 1, repeat: if even halve it, else replace it by $m*n+1. Return "
        "the number of steps to reach 1, or -1 if 1 is not reached within $cap steps.",
        "def collatz_steps(n):\n    steps = 0\n    while n != 1:\n"
        "        if steps >= $cap:\n            return -1\n"
        "        n = n // 2 if n % 2 == 0 else $m * n + 1\n        steps += 1\n"
        "    return steps\n",
        [{"m": m, "cap": c} for m in (1, 3) for c in (10, 50, 100, 1000)],
        _one(lambda r: r.randint(1, 200)),
    ),
    Template(
        "to_base",
        "to_base(n: int) -> str",
        "Return the non-negative integer n written in base $k using digits "
        "0-9 then lowercase letters; 0 is '0'.",
        "def to_base(n):\n    digits = '0123456789abcdefghijklmnopqrstuvwxyz'\n"
        "    if n == 0:\n        return '0'\n    out = ''\n    while n:\n"
        "        out = digits[n % $k] + out\n        n //= $k\n    return out\n",
        [{"k": k} for k in (2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 20, 36)],
        _one(lambda r: r.randint(0, 10**5)),
    ),
    Template(
        "word_stat",
        "word_stat(text: str) -> $rtype",
        "Split the text on whitespace and return the $what.",
        "def word_stat(text):\n    words = text.split()\n    return $expr\n",
        [
            {"what": w, "rtype": t, "expr": e}
            for w, t, e in (
                ("number of words", "int", "len(words)"),
                (
                    "longest word (the first one on ties), or '' if there are none",
                    "str",
                    "max(words, key=len) if words else ''",
                ),
                ("list of word lengths", "list[int]", "[len(w) for w in words]"),
                ("words in reverse order, joined by single spaces", "str", "' '.join(reversed(words))"),
                ("number of distinct words, ignoring case", "int", "len({w.lower() for w in words})"),
                (
                    "words that are palindromes ignoring case, in order",
                    "list[str]",
                    "[w for w in words if w.lower() == w.lower()[::-1]]",
                ),
                ("words sorted case-insensitively (stable)", "list[str]", "sorted(words, key=str.lower)"),
                (
                    "first letter of each word, uppercased, joined",
                    "str",
                    "''.join(w[0].upper() for w in words)",
                ),
            )
        ],
        _one(_words),
    ),
    Template(
        "transpose",
        "transpose(matrix: list[list[int]]) -> list[list[int]]",
        "Return the transpose of a rectangular matrix with $rows rows (rows become columns).",
        "def transpose(matrix):\n    return [list(col) for col in zip(*matrix)]\n",
        [{"rows": r} for r in range(1, 13)],
        lambda rng, p: [
            [[[rng.randint(-9, 9) for _ in range(w)] for _ in range(p["rows"])]]
            for w in (rng.randint(1, 5) for _ in range(16))
        ],
    ),
    Template(
        "pair_count",
        "pair_count(nums: list[int]) -> int",
        "Return the number of index pairs i < j with nums[i] + nums[j] == $t.",
        "def pair_count(nums):\n    return sum(1 for i in range(len(nums))\n"
        "               for j in range(i + 1, len(nums)) if nums[i] + nums[j] == $t)\n",
        [{"t": t} for t in (-6, -4, -2, -1, 0, 1, 2, 3, 4, 5, 7, 10)],
        _one(lambda r: _ints(r, 10, -6, 8)),
    ),
    Template(
        "balanced",
        "balanced(text: str) -> bool",
        "Return True if the brackets $pairs in the text are balanced and properly nested "
        "(other characters are ignored).",
        "def balanced(text):\n    pairs = dict(zip('$closers', '$openers'))\n    stack = []\n"
        "    for c in text:\n        if c in '$openers':\n            stack.append(c)\n"
        "        elif c in pairs:\n            if not stack or stack.pop() != pairs[c]:\n"
        "                return False\n    return not stack\n",
        [
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
        _one(lambda r: "".join(r.choice("()[]{}<>ab") for _ in range(r.randint(0, 12)))),
    ),
    Template(
        "interleave",
        "interleave(a: str, b: str) -> str",
        "Interleave the two strings $n character(s) at a time, starting with a; append "
        "whatever remains of the longer string.",
        "def interleave(a, b):\n    out, i = [], 0\n    while i < len(a) or i < len(b):\n"
        "        out.append(a[i:i + $n])\n        out.append(b[i:i + $n])\n        i += $n\n"
        "    return ''.join(out)\n",
        [{"n": n} for n in range(1, 13)],
        lambda rng, p: [[_text(rng, 10), _text(rng, 10)] for _ in range(16)],
    ),
    Template(
        "fib_mod",
        "fib_mod(n: int) -> int",
        "Return F(n) modulo $m, where F(0) = 0, F(1) = 1 and F(n) = F(n-1) + F(n-2).",
        "def fib_mod(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
        "        a, b = b, (a + b) % $m\n    return a % $m\n",
        [{"m": m} for m in (2, 3, 7, 10, 11, 97, 100, 101, 1000, 9973, 10007, 65536)],
        _one(lambda r: r.randint(0, 500)),
    ),
    Template(
        "case_convert",
        "case_convert(name: str) -> str",
        "Convert a $src identifier to $dst.",
        "def case_convert(name):\n    parts = $split\n    return $join\n",
        [
            {"src": s, "dst": d, "split": sp, "join": j}
            for s, d, sp, j in (
                (
                    "snake_case",
                    "camelCase",
                    "[p for p in name.split('_') if p]",
                    "(parts[0].lower() + ''.join(p.capitalize() for p in parts[1:])) if parts else ''",
                ),
                (
                    "snake_case",
                    "PascalCase",
                    "[p for p in name.split('_') if p]",
                    "''.join(p.capitalize() for p in parts)",
                ),
                (
                    "snake_case",
                    "kebab-case",
                    "[p for p in name.split('_') if p]",
                    "'-'.join(p.lower() for p in parts)",
                ),
                (
                    "snake_case",
                    "UPPER_SNAKE_CASE",
                    "[p for p in name.split('_') if p]",
                    "'_'.join(p.upper() for p in parts)",
                ),
                (
                    "kebab-case",
                    "snake_case",
                    "[p for p in name.split('-') if p]",
                    "'_'.join(p.lower() for p in parts)",
                ),
                (
                    "kebab-case",
                    "camelCase",
                    "[p for p in name.split('-') if p]",
                    "(parts[0].lower() + ''.join(p.capitalize() for p in parts[1:])) if parts else ''",
                ),
                (
                    "dot.case",
                    "snake_case",
                    "[p for p in name.split('.') if p]",
                    "'_'.join(p.lower() for p in parts)",
                ),
                (
                    "dot.case",
                    "Title Case",
                    "[p for p in name.split('.') if p]",
                    "' '.join(p.capitalize() for p in parts)",
                ),
            )
        ],
        lambda rng, p: [
            [
                _SEPARATORS[p["src"]].join(
                    rng.choice(["user", "id", "max", "http", "x", "value", "a", "list"])
                    for _ in range(rng.randint(1, 4))
                )
            ]
            for _ in range(16)
        ],
    ),
    Template(
        "product_except",
        "product_except(nums: list[int]) -> list[int]",
        "Return a list where element i is the product of all numbers except nums[i], "
        "taken modulo $m (Python's % semantics).",
        "def product_except(nums):\n    out = []\n    for i in range(len(nums)):\n"
        "        p = 1\n        for j, x in enumerate(nums):\n            if j != i:\n"
        "                p *= x\n        out.append(p % $m)\n    return out\n",
        [{"m": m} for m in (5, 7, 10, 11, 13, 17, 100, 101, 997, 1000, 10007, 10**9 + 7)],
        _one(lambda r: _ints(r, 7, -9, 9)),
    ),
    Template(
        "bits",
        "bits(n: int) -> int",
        "For the non-negative integer n, return the $what.",
        "def bits(n):\n    return $expr\n",
        [
            {"what": w, "expr": e}
            for w, e in (
                ("number of 1 bits", "bin(n).count('1')"),
                ("number of 0 bits in its binary form (0 has one)", "bin(n)[2:].count('0')"),
                ("position of the lowest set bit (0-based), or -1 for 0", "(n & -n).bit_length() - 1"),
                ("number of bits needed to write it (0 needs 0)", "n.bit_length()"),
                ("value with its binary digits reversed", "int(bin(n)[2:][::-1], 2)"),
                ("parity of its 1 bits (1 if odd)", "bin(n).count('1') % 2"),
                ("largest power of two <= n, or 0 for 0", "1 << (n.bit_length() - 1) if n else 0"),
                (
                    "length of the longest run of 1 bits",
                    "max((len(s) for s in bin(n)[2:].split('0')), default=0)",
                ),
            )
        ],
        _one(lambda r: r.randint(0, 5000)),
    ),
    Template(
        "run_length",
        "run_length(text: str) -> list[list]",
        "Run-length encode the text as a list of [character, count] pairs, merging runs $how.",
        "def run_length(text):\n    out = []\n    for c in text:\n"
        "        key = $key\n        if out and out[-1][0] == key:\n            out[-1][1] += 1\n"
        "        else:\n            out.append([key, 1])\n    return out\n",
        [
            {"how": h, "key": k}
            for h, k in (
                ("exactly (case-sensitive)", "c"),
                ("ignoring case (use the lowercase letter)", "c.lower()"),
            )
        ],
        _one(lambda r: "".join(r.choice("aabbbcA ") for _ in range(r.randint(0, 14)))),
    ),
    Template(
        "triangle_sum",
        "triangle_sum(n: int) -> int",
        "Return the sum of every $k-th integer from 0 up to and including n (0, $k, 2*$k, ...).",
        "def triangle_sum(n):\n    return sum(range(0, n + 1, $k))\n",
        [{"k": k} for k in range(1, 13)],
        _one(lambda r: r.randint(0, 1000)),
    ),
    Template(
        "mode_value",
        "mode_value(nums: list[int]) -> int | None",
        "Return the most frequent value; on ties return the $tie of the tied values; None for an empty list.",
        "def mode_value(nums):\n    if not nums:\n        return None\n"
        "    counts = {}\n    for x in nums:\n        counts[x] = counts.get(x, 0) + 1\n"
        "    best = max(counts.values())\n    return $tie([x for x, c in counts.items() "
        "if c == best])\n",
        [{"tie": t} for t in ("min", "max")],
        _one(lambda r: _ints(r, 10, -3, 3)),
    ),
    Template(
        "histogram",
        "histogram(nums: list[int]) -> dict[str, int]",
        "Return a dict mapping each bucket label to its count, where a number x falls in "
        "bucket str(x // $w * $w). Empty buckets are left out.",
        "def histogram(nums):\n    out = {}\n    for x in nums:\n"
        "        key = str(x // $w * $w)\n        out[key] = out.get(key, 0) + 1\n"
        "    return out\n",
        [{"w": w} for w in range(2, 14)],
        _one(_ints),
    ),
    Template(
        "pad_table",
        "pad_table(rows: list[list[str]]) -> list[str]",
        "Left-justify every cell to the width of the widest cell in its column and join "
        "the cells of each row with '$sep'; return the lines (rows have equal length).",
        "def pad_table(rows):\n    if not rows:\n        return []\n"
        "    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]\n"
        "    return ['$sep'.join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]\n",
        [{"sep": s} for s in (" | ", ",", " ", "\\t", ";", " :: ", "|", " - ")],
        lambda rng, p: [
            [
                [
                    [rng.choice(["a", "bb", "ccc", "", "dddd"]) for _ in range(c)]
                    for _ in range(rng.randint(0, 4))
                ]
            ]
            for c in (rng.randint(1, 3) for _ in range(16))
        ],
    ),
    Template(
        "window_sums",
        "window_sums(nums: list[int]) -> list[int]",
        "Return the sums of all contiguous windows of length $k, in order (empty if the list "
        "is shorter than $k).",
        "def window_sums(nums):\n    return [sum(nums[i:i + $k]) for i in range(len(nums) - $k + 1)]\n",
        [{"k": k} for k in range(1, 13)],
        _one(lambda r: _ints(r, 12)),
    ),
    Template(
        "count_longer",
        "count_longer(text: str) -> int",
        "Return how many whitespace-separated words of the text have more than $k characters.",
        "def count_longer(text):\n    return sum(1 for w in text.split() if len(w) > $k)\n",
        [{"k": k} for k in range(0, 6)],
        _one(_words),
    ),
    Template(
        "starting_with",
        "starting_with(text: str) -> list[str]",
        "Return the whitespace-separated words of the text that start with the letter '$c', ignoring case, "
        "in their original order and spelling.",
        "def starting_with(text):\n    return [w for w in text.split() if w[0].lower() == '$c']\n",
        [{"c": c} for c in "aekzmtlqisrb"],
        _one(_words),
    ),
]
