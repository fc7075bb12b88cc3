"""The replay engine: memory policies x encodings on Synthetic Graph World episodes, metrics with
paired bootstrap intervals, the encoding x allocation ablation, τ sweeps and frozen replay."""

from .experiments import ReplayResult, TauRow, parse_taus, replay_ablation, replay_compare, replay_encodings, run_arms
from .frozen import FrozenReplay, FrozenRow, frozen_replay
from .metrics import ArmMetrics, PairedDelta, arm_metrics, paired_deltas, tail_states
from .runner import AGENTS, Arm, Episode, EpisodeLog, ReplayConfig, episode, run_episode

__all__ = [
    "AGENTS",
    "Arm",
    "ArmMetrics",
    "Episode",
    "EpisodeLog",
    "FrozenReplay",
    "FrozenRow",
    "PairedDelta",
    "ReplayConfig",
    "ReplayResult",
    "TauRow",
    "arm_metrics",
    "episode",
    "frozen_replay",
    "paired_deltas",
    "parse_taus",
    "replay_ablation",
    "replay_compare",
    "replay_encodings",
    "run_arms",
    "tail_states",
]
