"""The replay engine: memory policies x encodings on Synthetic Graph World episodes, in open loop (the
same trajectories for every arm) or closed loop (the agent acts from the memory prompt), metrics with
paired bootstrap intervals, reference rows, the encoding x allocation ablation, τ sweeps, budget
sweeps (Pareto) and frozen replay."""

from ..stats.paired import PairedDelta
from .agents import CLOSED_LOOP_AGENTS, EndpointAgent, ReaderAgent, make_agent
from .experiments import ReplayResult, TauRow, parse_taus, replay_ablation, replay_compare, replay_encodings, run_arms
from .frozen import FrozenReplay, FrozenRow, TrajectoryTerm, frozen_replay
from .metrics import (
    ArmMetrics,
    ReferenceMetrics,
    arm_metrics,
    paired_deltas,
    reference_metrics,
    tail_states,
    tail_steps,
)
from .pareto import ParetoPoint, ParetoResult, parse_budgets, replay_pareto
from .runner import AGENTS, Arm, Episode, EpisodeLog, ReplayConfig, episode, run_episode

__all__ = [
    "AGENTS",
    "CLOSED_LOOP_AGENTS",
    "Arm",
    "ArmMetrics",
    "EndpointAgent",
    "Episode",
    "EpisodeLog",
    "FrozenReplay",
    "FrozenRow",
    "PairedDelta",
    "ParetoPoint",
    "ParetoResult",
    "ReaderAgent",
    "ReferenceMetrics",
    "ReplayConfig",
    "ReplayResult",
    "TauRow",
    "TrajectoryTerm",
    "arm_metrics",
    "episode",
    "frozen_replay",
    "make_agent",
    "paired_deltas",
    "parse_budgets",
    "parse_taus",
    "reference_metrics",
    "replay_ablation",
    "replay_compare",
    "replay_encodings",
    "replay_pareto",
    "run_arms",
    "run_episode",
    "tail_states",
    "tail_steps",
]
