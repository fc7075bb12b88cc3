"""The options ``ctwm world run|grid|ladder`` share, declared once (:data:`SHARED`), and the decorator
:func:`world_options` that adds them to a command and hands it one :class:`WorldOptions`, which builds
the library's :class:`~ctwm_cli.world.WorldConfig` (:meth:`WorldOptions.config`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..common.errors import UsageError
from ..common.vocabulary import ALL_RETRIEVERS, EVICTION_RULES, WORLD_ORDERS, WORLD_PRESETS, WORLD_WALKS
from ..common.vocabulary import GRAPH_FAMILIES as FAMILIES
from ..common.vocabulary import WORLD_POLICIES as POLICIES
from .option_groups import choice, option_group, param

if TYPE_CHECKING:
    from ..world import WorldConfig

Family = choice("Family", FAMILIES)
PolicyName = choice("PolicyName", POLICIES)
RetrieverName = choice("RetrieverName", ALL_RETRIEVERS)
Walk = choice("Walk", WORLD_WALKS)
Order = choice("Order", WORLD_ORDERS)
Store = choice("Store", EVICTION_RULES)
Preset = choice("Preset", WORLD_PRESETS)

WalkOpt = Annotated[Walk | None, typer.Option(  # type: ignore[valid-type]
    "--walk", help="Random-walk step. typed [default]: a uniform action, then its Dirichlet outcome distribution "
    "(ctwm's reading of the paper's typed stochastic actions). uniform-neighbour: the next state uniform over the "
    "neighbours, the action fixed by the neighbour (the paper's code).")]
OrderOpt = Annotated[Order | None, typer.Option(  # type: ignore[valid-type]
    "--order", help="retrieve-first [default]: retrieval for s_t sees e_0..e_{t-1} only (no leak). write-first: "
    "e_t is written, then retrieved for s_t (the paper's Section 3 wording and its code). Random walk only.")]
StoreOpt = Annotated[Store | None, typer.Option(  # type: ignore[valid-type]
    "--store", help="Store eviction rule for every retriever (ladder: every rung) [default: the retriever's own: "
    "LFU for state-frequency/state-tau, random replacement otherwise]. lfu: the paper's code's one store; "
    "random: random replacement (ctwm's 'uniform reservoir'); reservoir: Algorithm R, a uniform sample of the "
    "arrivals.")]
TauOpt = Annotated[float | None, typer.Option(
    "--tau", help="state-tau retriever: k of the top 10 state-mates drawn with weights rank^-tau (the paper's "
    "code's tau sweep, acting on the trace) [default: 1.0].")]
PresetOpt = Annotated[Preset | None, typer.Option(  # type: ignore[valid-type]
    "--preset", help="artifact: every choice of the paper's public code (uniform-neighbour walk, write-first, one "
    "LFU store, absolute block probabilities p_in .15/p_out .01, BA m = min(3, part/30), exponential scale 6, "
    "one-way ring repair, 1-3 actions); explicit options win. Recorded in every manifest.")]

StepsOpt = Annotated[int, typer.Option("--steps", help="Agent steps per run.")]
KOpt = Annotated[int, typer.Option("--k", help="Items retrieved per step (top-k).")]
CapacityOpt = Annotated[int, typer.Option("--capacity", help="Memory store capacity (transitions).")]
GraphParamOpt = Annotated[
    list[str] | None,
    typer.Option("--graph-param", help="Graph family parameter KEY=VALUE (degree, mean_degree, m, blocks, mixing, "
                 "bridges). Repeatable."),
]
WorldParamOpt = Annotated[
    list[str] | None,
    typer.Option("--world-param", help="World parameter KEY=VALUE (actions_min, actions_max, concentration, "
                 "regions). Repeatable."),
]
PolicyParamOpt = Annotated[
    list[str] | None,
    typer.Option("--policy-param", help="Policy parameter KEY=VALUE (semantic: epsilon, zipf, memory_weight, "
                 "revisit_penalty, max_task_steps; endpoint: timeout, retries, api_key_env, zipf, max_task_steps). "
                 "Repeatable."),
]
BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", help="Endpoint policy: base URL of an OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1). "
    "Key from $CTWM_API_KEY or $OPENAI_API_KEY.")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Endpoint policy: model name.")]
WritesOpt = Annotated[bool, typer.Option("--writes/--no-writes",
                                         help="Also record one write event per step in the trace.")]
OverwriteOpt = Annotated[bool, typer.Option(
    "--overwrite", help="Replace an existing trace or grid in --out (deletes only its files).")]
ResumeOpt = Annotated[bool, typer.Option(
    "--resume", help="Complete an interrupted grid in --out with the same options: cells whose file matches the "
    "manifest's SHA-256 are kept, the rest are run.")]
PolicyOpt = Annotated[PolicyName, typer.Option("--policy", help="Agent policy.")]  # type: ignore[valid-type]
RetrieverOpt = Annotated[RetrieverName, typer.Option("--retriever", help="Retriever (ladder rung).")]  # type: ignore[valid-type]


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _pairs(specs: list[str] | None, option: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in specs or []:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"{option} expects KEY=VALUE, got {spec!r}")
        out[key.strip()] = _value(value.strip())
    return out


@dataclasses.dataclass(frozen=True)
class WorldOptions:
    """The shared world options as parsed."""

    policy: Any
    steps: int
    k: int
    capacity: int
    graph_param: list[str] | None
    world_param: list[str] | None
    policy_param: list[str] | None
    base_url: str | None
    model: str | None
    walk: Any
    order: Any
    store: Any
    tau: float | None
    preset: Any
    writes: bool = True

    def config(self, *, family: str, size: int, retriever: str, seed: int,
               policy: str | None = None) -> WorldConfig:
        """The library's :class:`WorldConfig` of these options for one family, size, retriever and seed."""
        policy = self.policy.value if policy is None else policy
        pp = _pairs(self.policy_param, "--policy-param")
        if self.base_url is not None:
            pp["base_url"] = self.base_url
        if self.model is not None:
            pp["model"] = self.model
        if (self.base_url or self.model) and policy != "endpoint":
            raise UsageError("--base-url and --model apply to --policy endpoint only")
        from ..world import WorldConfig  # the library loads when a command runs, never for --help

        return WorldConfig(
            family=family, size=size, policy=policy, retriever=retriever, steps=self.steps, seed=seed, k=self.k,
            capacity=self.capacity, graph_params=_pairs(self.graph_param, "--graph-param"),
            world_params=_pairs(self.world_param, "--world-param"), policy_params=pp, writes=self.writes,
            walk=self.walk.value if self.walk else None, order=self.order.value if self.order else None,
            store=self.store.value if self.store else None, tau=self.tau,
            preset=self.preset.value if self.preset else None,
        )


SHARED = [
    param("policy", PolicyOpt, PolicyName["random-walk"]),
    param("steps", StepsOpt, 100_000),
    param("k", KOpt, 3),
    param("capacity", CapacityOpt, 200),
    param("graph_param", GraphParamOpt, None),
    param("world_param", WorldParamOpt, None),
    param("policy_param", PolicyParamOpt, None),
    param("base_url", BaseUrlOpt, None),
    param("model", ModelOpt, None),
    param("writes", WritesOpt, True),
    param("walk", WalkOpt, None),
    param("order", OrderOpt, None),
    param("store", StoreOpt, None),
    param("tau", TauOpt, None),
    param("preset", PresetOpt, None),
]

#: adds :data:`SHARED` to a command, which receives them as ``opts: WorldOptions``
world_options = option_group(SHARED, WorldOptions)
#: the same without --writes/--no-writes (the ladder counts retrieve and write events of every rung)
world_options_no_writes = option_group(SHARED, WorldOptions, without=("writes",))
