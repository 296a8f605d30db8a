"""BM25 over the corpus through a well-kept library — two candidates behind one interface.

``benchmarks/search_engines.py`` compares them on index time, query latency and recall on the
task set; ``docs/envs/search.md`` says which one is the default and why.
"""

from __future__ import annotations

import re
import tempfile
from typing import Any, Protocol

_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class SearchIndex(Protocol):
    def search(self, query: str, k: int) -> list[tuple[str, float]]: ...


class Bm25sIndex:
    """``bm25s``: BM25 as sparse-matrix products (numpy/scipy), in memory."""

    def __init__(self, docs: list[dict[str, str]]) -> None:
        import bm25s

        self.ids = [d["id"] for d in docs]
        self.retriever = bm25s.BM25()
        self.retriever.index([tokens(d["title"] + " " + d["text"]) for d in docs], show_progress=False)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        words = tokens(query)
        if not words:
            return []
        results, scores = self.retriever.retrieve([words], k=min(k, len(self.ids)), show_progress=False)
        return [
            (self.ids[int(i)], round(float(s), 6))
            for i, s in zip(results[0], scores[0], strict=True)
            if float(s) > 0
        ]


class TantivyIndex:
    """``tantivy``: the Rust search engine (BM25), an on-disk index in a temp dir."""

    def __init__(self, docs: list[dict[str, str]]) -> None:
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("body", stored=False)
        self.schema = builder.build()
        self._dir = tempfile.TemporaryDirectory(prefix="gymhub-tantivy-")
        self.index = tantivy.Index(self.schema, path=self._dir.name)
        writer = self.index.writer(heap_size=50_000_000, num_threads=1)
        for d in docs:
            writer.add_document(tantivy.Document(id=d["id"], body=d["title"] + " " + d["text"]))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        words = tokens(query)
        if not words:
            return []
        searcher = self.index.searcher()
        parsed = self.index.parse_query(" ".join(words), ["body"])
        hits = searcher.search(parsed, k).hits
        return [(searcher.doc(address)["id"][0], round(float(score), 6)) for score, address in hits]


ENGINES: dict[str, Any] = {"bm25s": Bm25sIndex, "tantivy": TantivyIndex}
