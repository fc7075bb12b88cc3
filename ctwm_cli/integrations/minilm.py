"""An offline LangChain ``Embeddings``: all-MiniLM-L6-v2 (int8 ONNX) from the ``embeddings`` extra.

It lets real memory systems run without a network: Mem0 through its ``langchain`` embedder provider
(``{"embedder": {"provider": "langchain", "config": {"model": MiniLMEmbeddings()}}}``, 384 dimensions)
and a LangGraph store's ``index={"embed": MiniLMEmbeddings(), "dims": 384}``. The model is
:class:`ctwm_cli.memory.hybrid.OnnxEmbedder` (nothing is downloaded); needs ``langchain-core``.
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from ..memory.hybrid import OnnxEmbedder

DIMS = 384


class MiniLMEmbeddings(Embeddings):
    """Sentence embeddings (384-d, L2-normalised) of all-MiniLM-L6-v2 on onnxruntime."""

    def __init__(self) -> None:
        self._model = OnnxEmbedder()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._model.encode(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
