"""Benchmark episodes: LongMemEval-format question sets and text games (TextWorld, ALFWorld),
replayed under Graph Memory and CTWM with paired token counts, plus the Table 5 style report."""

from .lme_format import QUESTION_TYPES, Question, load_longmemeval, parse_longmemeval
from .lme_prompts import Recall, evidence_recall, recall_critical
from .longmemeval import LongMemEvalResult, run_longmemeval
from .packing import BENCH_POLICIES, PackedPrompt, bm25_scores, pack_ctwm, pack_graph
from .report import BenchReport, ReportRow, bench_report
from .textgames import GameEpisode, TextGameResult, discover_games, make_games, play_game, run_textgames

__all__ = [
    "BENCH_POLICIES",
    "QUESTION_TYPES",
    "BenchReport",
    "GameEpisode",
    "LongMemEvalResult",
    "PackedPrompt",
    "Question",
    "Recall",
    "ReportRow",
    "TextGameResult",
    "bench_report",
    "bm25_scores",
    "discover_games",
    "evidence_recall",
    "load_longmemeval",
    "make_games",
    "pack_ctwm",
    "pack_graph",
    "parse_longmemeval",
    "play_game",
    "recall_critical",
    "run_longmemeval",
    "run_textgames",
]
