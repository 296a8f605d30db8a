"""bm25s vs tantivy on search-v0: index time, query latency, recall of the gold document.

    python benchmarks/search_engines.py

Queries are the task questions as asked; recall@k counts the first gold document in the top k.
"""

from __future__ import annotations

import statistics
import time

from rich.console import Console
from rich.table import Table

import gymhub
from gymhub.envs.search.corpus import documents
from gymhub.envs.search.engines import ENGINES


def main() -> None:
    docs = list(documents(0))
    tasks = gymhub.make("search-v0").all_tasks
    questions = [(t.prompt.split("\n")[0], t.hidden["gold_docs"][0]) for t in tasks]
    table = Table(
        "engine",
        "index (ms)",
        "query p50 (ms)",
        "query p95 (ms)",
        "recall@1",
        "recall@5",
        "recall@10",
        title=f"search engines on {len(docs)} documents, {len(questions)} questions",
    )
    for name, engine in ENGINES.items():
        start = time.perf_counter()
        index = engine(docs)
        build = (time.perf_counter() - start) * 1000
        latencies, ranks = [], []
        for question, gold in questions:
            start = time.perf_counter()
            hits = [doc_id for doc_id, _ in index.search(question, 10)]
            latencies.append((time.perf_counter() - start) * 1000)
            ranks.append(hits.index(gold) + 1 if gold in hits else None)

        def recall(k: int, ranks: list[int | None] = ranks) -> str:
            return f"{sum(1 for r in ranks if r is not None and r <= k) / len(ranks):.3f}"

        ordered = sorted(latencies)
        table.add_row(
            name,
            f"{build:.0f}",
            f"{statistics.median(latencies):.3f}",
            f"{ordered[int(0.95 * (len(ordered) - 1))]:.3f}",
            recall(1),
            recall(5),
            recall(10),
        )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
