"""Memory stores and retrievers (the retriever ladder of paper Fig. 3), memory policies, prompt
encodings, token counting and the predictors that read the prompts."""

from .encodings import ENCODINGS, make_encoding
from .policies import MEMORY_POLICIES, EpisodicMemory, MemoryPolicy, Prompt, Retrieval, make_policy
from .predictor import PREDICTORS, Prediction, PromptReader, make_predictor
from .retrievers import RETRIEVER_EVICTION, RETRIEVERS, Retriever, make_retriever, make_store
from .store import EVICTION_RULES, TransitionStore, UniformStream
from .tiered import TieredMemory
from .tiered_params import TIERED_DEFAULTS
from .tiered_store import TIERS, MemoryEntry
from .tokens import TOKENIZERS, TokenCounter, count_tokens, token_counter

__all__ = [
    "ENCODINGS",
    "EVICTION_RULES",
    "MEMORY_POLICIES",
    "PREDICTORS",
    "RETRIEVERS",
    "RETRIEVER_EVICTION",
    "TIERED_DEFAULTS",
    "TIERS",
    "TOKENIZERS",
    "EpisodicMemory",
    "MemoryEntry",
    "MemoryPolicy",
    "Prediction",
    "Prompt",
    "PromptReader",
    "Retrieval",
    "Retriever",
    "TieredMemory",
    "TokenCounter",
    "TransitionStore",
    "UniformStream",
    "count_tokens",
    "make_encoding",
    "make_policy",
    "make_predictor",
    "make_retriever",
    "make_store",
    "token_counter",
]
