"""The options of ``ctwm world run|grid|ladder`` declared once (issue 43): :class:`WorldSettings` (the three
commands'; :meth:`WorldSettings.config` builds the library's :class:`~ctwm_cli.world.WorldConfig`) and each
command's own (:class:`RunFlags`, :class:`GridFlags` and :class:`GridRun`, :class:`LadderFlags` and
:class:`LadderRun`). Each field generates its flag, its check, its ``ctwm.toml`` key and its row of
``docs/options.md``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..common.errors import UsageError
from ..common.settings import REQUIRED, SEED_HELP, Declared, in_range, option
from ..common.vocabulary import ALL_RETRIEVERS, EVICTION_RULES, WORLD_ORDERS, WORLD_PRESETS, WORLD_WALKS
from ..common.vocabulary import GRAPH_FAMILIES as FAMILIES
from ..common.vocabulary import WORLD_POLICIES as POLICIES
from .declared import declared_flags
from .options import PLOT_HELP

if TYPE_CHECKING:
    from ..world import WorldConfig

#: why a config may not set an option (``config=False``)
WRITES = "it writes files"
CONTACTS = "it contacts another machine, a model server"
JOBS_HELP = "Worker processes (default: all cores). Results do not depend on it."
OVERWRITE_HELP = "Replace an existing trace or grid in --out (deletes only its files)."
FAMILIES_HELP = (f"Graph families ({', '.join(FAMILIES)}), a comma list or repeated [default: all six].")


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


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorldSettings(Declared):
    """The options every ``ctwm world`` command shares, as checked."""

    WHAT = "world option"

    policy: str = option("random-walk", flags=("--policy",), choices=POLICIES, help="Agent policy.")
    steps: int = option(100_000, flags=("--steps",), help="Agent steps per run.")
    k: int = option(3, flags=("--k",), help="Items retrieved per step (top-k).")
    capacity: int = option(200, flags=("--capacity",), help="Memory store capacity (transitions).")
    graph_param: list[str] | None = option(  # noqa: RUF009
        None, flags=("--graph-param",),
        help="Graph family parameter KEY=VALUE (degree, mean_degree, m, blocks, mixing, bridges). Repeatable.")
    world_param: list[str] | None = option(  # noqa: RUF009
        None, flags=("--world-param",),
        help="World parameter KEY=VALUE (actions_min, actions_max, concentration, regions). Repeatable.")
    policy_param: list[str] | None = option(  # noqa: RUF009
        None, flags=("--policy-param",),
        help="Policy parameter KEY=VALUE (semantic: epsilon, zipf, memory_weight, revisit_penalty, max_task_steps; "
        "endpoint: timeout, retries, api_key_env, zipf, max_task_steps). Repeatable.")
    base_url: str | None = option(
        None, flags=("--base-url",), config=False, reason=CONTACTS,
        help="Endpoint policy: base URL of an OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1). Key from "
        "$CTWM_API_KEY or $OPENAI_API_KEY.")
    model: str | None = option(None, flags=("--model",), help="Endpoint policy: model name.")
    writes: bool = option(True, flags=("--writes/--no-writes",),
                          help="Also record one write event per step in the trace.")
    walk: str | None = option(
        None, flags=("--walk",), choices=WORLD_WALKS,
        help="Random-walk step. typed [default]: a uniform action, then its Dirichlet outcome distribution (ctwm's "
        "reading of the paper's typed stochastic actions). uniform-neighbour: the next state uniform over the "
        "neighbours, the action fixed by the neighbour (the paper's code).")
    order: str | None = option(
        None, flags=("--order",), choices=WORLD_ORDERS,
        help="retrieve-first [default]: retrieval for s_t sees e_0..e_{t-1} only (no leak). write-first: e_t is "
        "written, then retrieved for s_t (the paper's Section 3 wording and its code). Random walk only.")
    store: str | None = option(
        None, flags=("--store",), choices=EVICTION_RULES,
        help="Store eviction rule for every retriever (ladder: every rung) [default: the retriever's own: LFU for "
        "state-frequency/state-tau, random replacement otherwise]. lfu: the paper's code's one store; random: "
        "random replacement (ctwm's 'uniform reservoir'); reservoir: Algorithm R, a uniform sample of the arrivals.")
    tau: float | None = option(
        None, flags=("--tau",),
        help="state-tau retriever: k of the top 10 state-mates drawn with weights rank^-tau (the paper's code's tau "
        "sweep, acting on the trace) [default: 1.0].")
    preset: str | None = option(
        None, flags=("--preset",), choices=WORLD_PRESETS,
        help="artifact: every choice of the paper's public code (uniform-neighbour walk, write-first, one LFU store, "
        "absolute block probabilities p_in .15/p_out .01, BA m = min(3, part/30), exponential scale 6, one-way ring "
        "repair, 1-3 actions); explicit options win. Recorded in every manifest.")

    def config(self, *, family: str, size: int, retriever: str, seed: int,
               policy: str | None = None) -> WorldConfig:
        """The library's :class:`WorldConfig` of these options for one family, size, retriever and seed."""
        policy = self.policy if policy is None else policy
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
            walk=self.walk, order=self.order, store=self.store, tau=self.tau, preset=self.preset,
        )


def _seed() -> Any:
    return option(None, flags=("--seed",), minimum=0, help=SEED_HELP)


def _retriever() -> Any:
    return option("state-frequency", flags=("--retriever",), choices=ALL_RETRIEVERS, help="Retriever (ladder rung).")


def _families() -> Any:
    return option(None, flags=("--family",), metavar="FAMILY[,FAMILY...]", help=FAMILIES_HELP)


def _jobs() -> Any:
    return option(None, flags=("--jobs", "-j"), help=JOBS_HELP)


def _overwrite() -> Any:
    return option(False, flags=("--overwrite",), config=False, reason=WRITES, help=OVERWRITE_HELP)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunFlags(Declared):
    """The options of ``ctwm world run``."""

    WHAT = "world run option"

    out: str = option(REQUIRED, flags=("--out", "-o"), config=False, reason=WRITES,
                      help="Directory to write trace.parquet and manifest.json into.")
    family: str = option("scale-free", flags=("--family",), choices=FAMILIES, help="Graph family.")
    size: int = option(500, flags=("--size",), help="Number of states |V|.")
    retriever: str = _retriever()
    seed: int | None = _seed()
    run: str | None = option(None, flags=("--run",), help="Run id in the trace [default: FAMILY-SIZE-SEED].")
    overwrite: bool = _overwrite()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GridFlags(Declared):
    """What ``ctwm world grid`` runs: families x sizes x seeds."""

    WHAT = "world grid option"

    out: str = option(REQUIRED, flags=("--out", "-o"), config=False, reason=WRITES,
                      help="Directory of the hive-partitioned dataset OUT/family=F/size=N/seed=S/part-0.parquet "
                      "(manifest: OUT/_manifest.json).")
    family: list[str] | None = _families()  # noqa: RUF009
    size: list[str] | None = option(None, flags=("--size",), metavar="N[,N...]",  # noqa: RUF009
                                    help="Graph sizes, a comma list or repeated [default: 100, 500, 1000].")
    replicates: int = option(3, flags=("--replicates",), check=in_range(lo=1),
                             help="Seeds per family and size: SEED, SEED+1, ...")
    seed: int | None = _seed()
    retriever: str = _retriever()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GridRun(Declared):
    """How ``ctwm world grid`` runs: workers, and what it does with a grid already in --out."""

    WHAT = "world grid option"

    jobs: int | None = _jobs()
    overwrite: bool = _overwrite()
    resume: bool = option(False, flags=("--resume",), config=False, reason=WRITES,
                          help="Complete an interrupted grid in --out with the same options: cells whose file "
                          "matches the manifest's SHA-256 are kept, the rest are run.")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LadderFlags(Declared):
    """What ``ctwm world ladder`` runs: retrievers x families."""

    WHAT = "world ladder option"

    family: list[str] | None = _families()  # noqa: RUF009
    retriever: list[str] | None = option(  # noqa: RUF009
        None, flags=("--retriever",), metavar="RETRIEVER[,RETRIEVER...]",
        help=f"Retrievers ({', '.join(ALL_RETRIEVERS)}), a comma list or repeated [default: the four rungs "
        "uniform-frequency, state-frequency, state-uniform, none].")
    size: int = option(500, flags=("--size",), help="Number of states |V|.")
    seed: int | None = _seed()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LadderRun(Declared):
    """How ``ctwm world ladder`` runs: workers, and its figure."""

    WHAT = "world ladder option"

    jobs: int | None = _jobs()
    plot: str | None = option(None, flags=("--plot",), config=False, reason="it writes a file", help=PLOT_HELP)


#: adds :class:`WorldSettings` to a command, which receives them checked as ``opts: WorldSettings``
world_options = declared_flags(WorldSettings, name="opts")
#: the same without --writes/--no-writes (the ladder counts retrieve and write events of every rung)
world_options_no_writes = declared_flags(WorldSettings, name="opts", without=("writes",))
