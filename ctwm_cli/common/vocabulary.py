"""The names and defaults the library and the CLI share, each written once.

Pure Python with no import: ``ctwm --help`` builds every command's choices and defaults from here
without loading the library (numpy, scipy, pyarrow: about a second), and the library modules import
the same constants (``world.graphs.FAMILIES`` *is* :data:`GRAPH_FAMILIES`), so no mirror can drift.
"""

from __future__ import annotations

# --- tail audit verdicts (paper Definition 3.4)
TPL = "tpl-compatible"
LOGNORMAL = "lognormal-compatible"
INCONCLUSIVE = "inconclusive"
VERDICTS = (TPL, LOGNORMAL, INCONCLUSIVE)
#: which verdict ``--expect`` checks: the paper's rule as printed, or the calibrated one
EXPECT_RULES = ("paper", "calibrated")
#: packages ``--cross-check`` runs on the same data
CROSS_CHECK_PACKAGES = ("powerlaw",)

# --- machine output
#: the JSON key of the lead paragraph (``ctwm_cli.reporting.summary``): one plain-language string per document,
#: and per result where a document holds several (``ctwm audit``'s results, ``ctwm health``'s scope reports)
SUMMARY_KEY = "summary"

# --- Synthetic Graph World
GRAPH_FAMILIES = ("uniform", "exponential", "scale-free", "modular", "mixed", "baseline-symmetric")
PAPER_SIZES = (100, 500, 1000)
WORLD_POLICIES = ("random-walk", "semantic", "endpoint")
WORLD_WALKS = ("typed", "uniform-neighbour")
WORLD_ORDERS = ("retrieve-first", "write-first")
WORLD_PRESETS = ("artifact",)
RETRIEVERS = ("uniform-frequency", "state-frequency", "state-uniform", "none")
ALL_RETRIEVERS = (*RETRIEVERS, "state-tau")
EVICTION_RULES = ("lfu", "random", "reservoir")

# --- replay and memory policies
OPEN_LOOP_AGENTS = ("random-walk", "semantic")
CLOSED_LOOP_AGENTS = ("reader", "endpoint")
REPLAY_AGENTS = (*OPEN_LOOP_AGENTS, *CLOSED_LOOP_AGENTS)
MEMORY_POLICIES = ("full", "flat", "graph", "ctwm", "tiered", "none")
ENCODINGS = ("verbose", "compact")
TOKENIZERS = ("cl100k_base", "o200k_base")
PREDICTORS = ("reader", "endpoint", "top1")
TAIL_ON = ("current", "next")  # which state makes a replay step a tail step: s_t, or s_{t+1} (the paper's code)
FLAT_RETRIEVALS = ("bm25", "uniform")  # the Flat policy's retrieval: ctwm's BM25, or the paper's code's uniform draw
GRAPH_RETRIEVALS = ("tiers", "recency")  # Graph: ctwm's tiers, or the code's recency out of s_t
CTWM_STORES = ("ranked", "five-feature")  # CTWM: ctwm's ranked store, or the code's five-feature 200-entry store

#: prompt budget (tokens) of a replayed memory policy; also ``ctwm simulate``'s budget B
DEFAULT_BUDGET = 512
#: items retrieved by flat and graph memory (top-k)
DEFAULT_K = 8
#: CTWM core size K of the memory policies and the benchmarks
DEFAULT_CORE = 8
#: CTWM exponent τ everywhere a single τ has a default
DEFAULT_TAU = 1.0
#: candidates graph and ctwm rank per step (memory policies and benchmarks)
DEFAULT_MAX_CANDIDATES = 64
#: ``ctwm simulate``'s core size K
SIMULATE_CORE = 10

# --- benchmarks
GAME_AGENTS = ("walkthrough", "random", "explore")
#: turns/observations the benchmark baselines retrieve (LongMemEval and text games)
BENCH_K = 16
LONGMEMEVAL_BUDGET = 4096
TEXTGAMES_BUDGET = 1024
#: SmolLM2's trained context; llama-cpp-python's own default (2048) truncates bench prompts
LOCAL_MODEL_N_CTX = 8192

# --- diagnostics and reading
#: the spectral exponent band fitted by ``ctwm psd``
BETA_BAND = (0.5, 1.5)
ENGINES = ("duckdb", "dask")
#: what a JSON trace file is read as: ``auto`` sniffs its content; the others are the telemetry readers
#: (``traces.telemetry.ROW_READERS``)
INPUT_FORMATS = ("auto", "otel", "mem0", "openinference")
#: ``ctwm psd``'s segment detrending (scipy.signal.welch)
DETRENDS = ("constant", "linear")
#: ``ctwm finite-size``'s logarithm bases
LOG_BASES = ("e", "10", "2")
#: the readings of σ_top10: ``log`` (ctwm's default), ``raw`` (the paper's words), ``cv`` (closest to its numbers)
SIGMA_VARIANTS = ("log", "raw", "cv")
#: ``ctwm simulate``'s ranking of items: per step when the trace allows, by counts, or per step (required)
RANKINGS = ("auto", "counts", "step")
#: what a replay's intervals resample: ``auto`` resolves to steps (blocks) or episodes (clusters)
RESAMPLES = ("auto", "steps", "episodes")
#: DuckDB's memory limit while reading and counting
MEMORY_LIMIT = "50%"
