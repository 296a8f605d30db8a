"""Reference solutions of the code family's templates, as real Python.

Each function is the reference of one template (or of one variant of it, where variants differ by
an expression rather than a value). The upper-case module-level names are the template's
parameters: :func:`gymhub.envs.code.templates.render_reference` replaces them, token by token, with
a variant's values (and a variant function's name with the template's entry point), so the source a
task ships is this source with the values written in, formatting kept byte for byte. The values
below are one variant's, so every function here runs as it is.

The bodies keep the layout the task set has always shipped (single quotes, ``items[i:i + K]``):
the rendered source is part of each task's hidden data, hence of its id. So ``ruff format`` leaves
this file alone, and the checks that would rewrite a body (``zip(..., strict=...)``, annotated
empty collections) are off.
"""

# fmt: off
# ruff: noqa: B905
# mypy: disable-error-code="var-annotated"

K = 2
LO = -5
HI = 0
CHARS = "aeiou"
FIZZ = "Fizz"
BUZZ = "Buzz"
FIZZ_EVERY = 3
BUZZ_EVERY = 5
MULTIPLIER = 3
MAX_STEPS = 1000
MODULUS = 97
WHICH = "first"
OPENERS = "(["
CLOSERS = ")]"
STEP = 2
TARGET = 0
WIDTH = 5
SEP = " | "
SEPARATOR = "_"
LETTER = "a"


def sum_powers(nums):
    return sum(x ** K for x in nums)


def count_multiples(nums):
    return sum(1 for x in nums if x % K == 0)


def rotate_left(items):
    if not items:
        return []
    k = K % len(items)
    return items[k:] + items[:k]


def caesar(text):
    out = []
    for c in text:
        if 'a' <= c <= 'z':
            out.append(chr((ord(c) - 97 + K) % 26 + 97))
        elif 'A' <= c <= 'Z':
            out.append(chr((ord(c) - 65 + K) % 26 + 65))
        else:
            out.append(c)
    return ''.join(out)


def every_nth(items):
    return items[::K]


def clamp_all(nums):
    return [min(max(x, LO), HI) for x in nums]


def count_chars(text):
    return sum(1 for c in text if c in CHARS)


def fizz_words(n):
    out = []
    for i in range(1, n + 1):
        s = (FIZZ if i % FIZZ_EVERY == 0 else '') + (BUZZ if i % BUZZ_EVERY == 0 else '')
        out.append(s or str(i))
    return out


def digit_sum_base(n):
    total = 0
    while n:
        total += n % K
        n //= K
    return total


def nth_largest_distinct(nums):
    values = sorted(set(nums), reverse=True)
    return values[K - 1] if len(values) >= K else None


def chunk(items):
    return [items[i:i + K] for i in range(0, len(items), K)]


def running_sum(nums):
    out = []
    for x in nums:
        out.append(x if not out else out[-1] + x)
    return out


def running_max(nums):
    out = []
    for x in nums:
        out.append(x if not out else max(out[-1], x))
    return out


def running_min(nums):
    out = []
    for x in nums:
        out.append(x if not out else min(out[-1], x))
    return out


def running_product(nums):
    out = []
    for x in nums:
        out.append(x if not out else out[-1] * x)
    return out


def running_difference(nums):
    out = []
    for x in nums:
        out.append(x if not out else out[-1] - x)
    return out


def running_or(nums):
    out = []
    for x in nums:
        out.append(x if not out else out[-1] | x)
    return out


def running_xor(nums):
    out = []
    for x in nums:
        out.append(x if not out else out[-1] ^ x)
    return out


def running_and(nums):
    out = []
    for x in nums:
        out.append(x if not out else out[-1] & x)
    return out


def dedupe_keep(items):
    seq = items if WHICH == 'first' else items[::-1]
    seen, out = set(), []
    for x in seq:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out if WHICH == 'first' else out[::-1]


def collatz_steps(n):
    steps = 0
    while n != 1:
        if steps >= MAX_STEPS:
            return -1
        n = n // 2 if n % 2 == 0 else MULTIPLIER * n + 1
        steps += 1
    return steps


def to_base(n):
    digits = '0123456789abcdefghijklmnopqrstuvwxyz'
    if n == 0:
        return '0'
    out = ''
    while n:
        out = digits[n % K] + out
        n //= K
    return out


def word_stat_count(text):
    words = text.split()
    return len(words)


def word_stat_longest(text):
    words = text.split()
    return max(words, key=len) if words else ''


def word_stat_lengths(text):
    words = text.split()
    return [len(w) for w in words]


def word_stat_reversed(text):
    words = text.split()
    return ' '.join(reversed(words))


def word_stat_distinct(text):
    words = text.split()
    return len({w.lower() for w in words})


def word_stat_palindromes(text):
    words = text.split()
    return [w for w in words if w.lower() == w.lower()[::-1]]


def word_stat_sorted(text):
    words = text.split()
    return sorted(words, key=str.lower)


def word_stat_initials(text):
    words = text.split()
    return ''.join(w[0].upper() for w in words)


def transpose(matrix):
    return [list(col) for col in zip(*matrix)]


def pair_count(nums):
    return sum(1 for i in range(len(nums))
               for j in range(i + 1, len(nums)) if nums[i] + nums[j] == TARGET)


def balanced(text):
    pairs = dict(zip(CLOSERS, OPENERS))
    stack = []
    for c in text:
        if c in OPENERS:
            stack.append(c)
        elif c in pairs:
            if not stack or stack.pop() != pairs[c]:
                return False
    return not stack


def interleave(a, b):
    out, i = [], 0
    while i < len(a) or i < len(b):
        out.append(a[i:i + STEP])
        out.append(b[i:i + STEP])
        i += STEP
    return ''.join(out)


def fib_mod(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, (a + b) % MODULUS
    return a % MODULUS


def to_camel_case(name):
    parts = [p for p in name.split(SEPARATOR) if p]
    return (parts[0].lower() + ''.join(p.capitalize() for p in parts[1:])) if parts else ''


def to_pascal_case(name):
    parts = [p for p in name.split(SEPARATOR) if p]
    return ''.join(p.capitalize() for p in parts)


def to_kebab_case(name):
    parts = [p for p in name.split(SEPARATOR) if p]
    return '-'.join(p.lower() for p in parts)


def to_upper_snake_case(name):
    parts = [p for p in name.split(SEPARATOR) if p]
    return '_'.join(p.upper() for p in parts)


def to_snake_case(name):
    parts = [p for p in name.split(SEPARATOR) if p]
    return '_'.join(p.lower() for p in parts)


def to_title_case(name):
    parts = [p for p in name.split(SEPARATOR) if p]
    return ' '.join(p.capitalize() for p in parts)


def product_except(nums):
    out = []
    for i in range(len(nums)):
        p = 1
        for j, x in enumerate(nums):
            if j != i:
                p *= x
        out.append(p % MODULUS)
    return out


def bits_ones(n):
    return bin(n).count('1')


def bits_zeros(n):
    return bin(n)[2:].count('0')


def bits_lowest_set(n):
    return (n & -n).bit_length() - 1


def bits_length(n):
    return n.bit_length()


def bits_reversed(n):
    return int(bin(n)[2:][::-1], 2)


def bits_parity(n):
    return bin(n).count('1') % 2


def bits_highest_power(n):
    return 1 << (n.bit_length() - 1) if n else 0


def bits_longest_run(n):
    return max((len(s) for s in bin(n)[2:].split('0')), default=0)


def run_length_exact(text):
    out = []
    for c in text:
        key = c
        if out and out[-1][0] == key:
            out[-1][1] += 1
        else:
            out.append([key, 1])
    return out


def run_length_ignore_case(text):
    out = []
    for c in text:
        key = c.lower()
        if out and out[-1][0] == key:
            out[-1][1] += 1
        else:
            out.append([key, 1])
    return out


def triangle_sum(n):
    return sum(range(0, n + 1, K))


def mode_value_min(nums):
    if not nums:
        return None
    counts = {}
    for x in nums:
        counts[x] = counts.get(x, 0) + 1
    best = max(counts.values())
    return min([x for x, c in counts.items() if c == best])


def mode_value_max(nums):
    if not nums:
        return None
    counts = {}
    for x in nums:
        counts[x] = counts.get(x, 0) + 1
    best = max(counts.values())
    return max([x for x, c in counts.items() if c == best])


def histogram(nums):
    out = {}
    for x in nums:
        key = str(x // WIDTH * WIDTH)
        out[key] = out.get(key, 0) + 1
    return out


def pad_table(rows):
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [SEP.join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]


def window_sums(nums):
    return [sum(nums[i:i + K]) for i in range(len(nums) - K + 1)]


def count_longer(text):
    return sum(1 for w in text.split() if len(w) > K)


def starting_with(text):
    return [w for w in text.split() if w[0].lower() == LETTER]
