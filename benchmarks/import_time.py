"""How long `import gymhub` (and a few of its entry points) takes in a fresh interpreter.

    python benchmarks/import_time.py [--repeats 7]

Each row is the median of ``--repeats`` fresh processes (``-X importtime`` is not used: it
slows imports down). A loaded machine shifts every row; compare rows, not runs. The test
suite checks only *what* is imported (tests/test_packaging.py), never how fast.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from rich.console import Console
from rich.table import Table

CASES = {
    "python (nothing)": "pass",
    "import gymnasium": "import gymnasium",
    "import gymhub": "import gymhub",
    "gymhub.make('toy-letters-v0')": "import gymhub; gymhub.make('toy-letters-v0')",
    "import gymhub._cli": "import gymhub._cli",
}

PROBE = "import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"


def seconds(code: str, repeats: int) -> list[float]:
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(code=code)], capture_output=True, text=True, check=True
        ).stdout
        runs.append(float(out.strip().splitlines()[-1]))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    title = f"import time, {args.repeats} fresh processes each"
    table = Table("what", "median s", "min s", "max s", title=title)
    for name, code in CASES.items():
        runs = seconds(code, args.repeats)
        table.add_row(name, f"{statistics.median(runs):.3f}", f"{min(runs):.3f}", f"{max(runs):.3f}")
    Console().print(table)


if __name__ == "__main__":
    main()
