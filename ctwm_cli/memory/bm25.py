"""Okapi BM25, the one implementation used by Flat Retrieval (:mod:`ctwm_cli.memory.policies`) and by the
benchmark packers (:mod:`ctwm_cli.bench.packing`).

k1 = 1.2, b = 0.75 and Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``, which is never negative.
The index is incremental (documents are added as the memory is written) and terms are any hashable
values (words, or word ids).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence

BM25_K1 = 1.2
BM25_B = 0.75


class BM25:
    """An incremental BM25 index: :meth:`add` documents, then :meth:`scores` a query."""

    def __init__(self, *, k1: float = BM25_K1, b: float = BM25_B):
        self.k1 = k1
        self.b = b
        self.postings: dict[Hashable, list[Hashable]] = {}
        self.tf: dict[Hashable, dict[Hashable, int]] = {}
        self.doclen: dict[Hashable, int] = {}
        self.total_len = 0

    @property
    def n_docs(self) -> int:
        return len(self.doclen)

    def add(self, doc: Hashable, terms: Iterable[Hashable]) -> None:
        """Index document ``doc`` (a new id) with its ``terms`` (repeats count)."""
        tf: dict[Hashable, int] = {}
        for term in terms:
            tf[term] = tf.get(term, 0) + 1
        n = sum(tf.values())
        self.tf[doc] = tf
        self.doclen[doc] = n
        self.total_len += n
        for term in tf:
            self.postings.setdefault(term, []).append(doc)

    def scores(self, query: Iterable[Hashable]) -> dict[Hashable, float]:
        """BM25 score of every indexed document sharing a term with ``query`` (a set of terms)."""
        n = self.n_docs
        if not n:
            return {}
        avgdl = self.total_len / n or 1.0
        k1, b = self.k1, self.b
        tfs, doclen = self.tf, self.doclen
        out: dict[Hashable, float] = {}
        for term in set(query):
            post = self.postings.get(term)
            if not post:
                continue
            df = len(post)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            for doc in post:
                f = tfs[doc][term]
                out[doc] = out.get(doc, 0.0) + idf * f * (k1 + 1) / (f + k1 * (1 - b + b * doclen[doc] / avgdl))
        return out


def bm25_scores(query: Iterable[Hashable], docs: Sequence[Sequence[Hashable]]) -> list[float]:
    """BM25 score of every document of ``docs`` (lists of terms) for the terms of ``query``."""
    index = BM25()
    for i, d in enumerate(docs):
        index.add(i, d)
    got = index.scores(query)
    return [got.get(i, 0.0) for i in range(len(docs))]
