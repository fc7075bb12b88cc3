"""Memory stores and retrievers (the retriever ladder of paper Fig. 3)."""

from .retrievers import RETRIEVER_EVICTION, RETRIEVERS, Retriever, make_retriever, make_store
from .store import EVICTION_RULES, TransitionStore, UniformStream

__all__ = [
    "EVICTION_RULES",
    "RETRIEVERS",
    "RETRIEVER_EVICTION",
    "Retriever",
    "TransitionStore",
    "UniformStream",
    "make_retriever",
    "make_store",
]
