"""Per-tenant health: one report per scope (user, agent, run, namespace) of a shared memory store.

``group_by`` names how a row's scope is found:

* ``run`` — the trace's ``run`` column (a LangGraph namespace, a Mem0 session scope, an episode);
* a column of the trace (``user``, ``tenant``, ``task``...) — its values;
* any other scope key (``user``, ``agent``, ``user_id``...) when the trace has no such column — that
  part of the scope text in ``run`` (:mod:`ctwm_cli.traces.scopekeys`: ``agent_id=planner&user_id=alice``
  as the Mem0 wrapper and ``ctwm import mem0`` write it, ``kind=memories&user=alice`` as the LangGraph
  wrapper writes it with ``scope_keys``); ``user`` reads ``user`` or ``user_id``.

Rows without a scope are left out of every group (counted in a note). A group's memory objects are
those whose ``scope`` names it; objects without a scope belong to the groups whose rows mention them.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..common.errors import InputError
from ..common.results import ToDict, result
from ..traces.objects import MemoryObjects
from ..traces.scopekeys import key_names, parse_scope, scope_value
from .events import EventLog


@result
class ScopeSummary(ToDict):
    """One row of the per-scope table."""

    group: str
    n_rows: int
    objects: int | None
    store_size: int
    dead_weight_share: float
    live: int
    never_retrieved: int
    stale_hit_share: float
    retrieval_hit_rate: float
    revoked_share: float
    expired_items: int
    queries: int = 0
    hits: int = 0
    stale_hits: int = 0
    revoked_items: int = 0
    growth_slope: float = float("nan")
    stale_above_current_share: float = float("nan")


def group_values(log: EventLog, group_by: str) -> list[str | None]:
    """The scope of each row of ``log`` under ``group_by`` (see the module docstring)."""
    if group_by == "run":
        return list(log.run)
    if log.group is not None:
        return list(log.group)
    values = [scope_value(r, group_by) for r in log.run]
    if any(v is not None for v in values):
        return values
    raise InputError(
        f"{log.source}: no column {group_by!r} to group by, and no run value is a scope text holding "
        f"{' or '.join(repr(k) for k in key_names(group_by))} (such as user_id=alice)",
        params=("group_by",),
    )


def scope_of_objects(objects: MemoryObjects, group_by: str, group: str, items: set[str]) -> MemoryObjects:
    """The objects of one group: those whose ``scope`` names the group, and those the group's rows mention
    whose scope cannot say otherwise (none, a text that is not a scope text, a mapping without the
    ``group_by`` entry).

    A scope is a text (``run``: equal to the group; another key: that part of a scope text such as a
    Mem0 session scope) or a mapping (``{"user": "u_102", "project": "p_77"}``: its ``group_by`` entry,
    or the ``user_id``-style one)."""
    names = key_names(group_by)

    def keep(oid: str, scope) -> bool:
        if isinstance(scope, Mapping):
            value = next((scope[n] for n in names if n in scope), None)
            return oid in items if value is None else value == group
        if scope is None:
            return oid in items
        if group_by == "run":
            return scope == group or oid in items
        parts = parse_scope(scope)
        if parts is None:
            return scope == group or oid in items
        value = next((parts[n] for n in names if n in parts), None)
        return oid in items if value is None else value == group

    return objects.restrict(keep)


def split_by_scope(log: EventLog, group_by: str) -> tuple[dict[str, list[int]], int]:
    """Row indices of each scope (sorted by scope), and the number of rows without one."""
    groups: dict[str, list[int]] = {}
    missing = 0
    for i, g in enumerate(group_values(log, group_by)):
        if g is None or g == "":
            missing += 1
        else:
            groups.setdefault(g, []).append(i)
    if not groups:
        raise InputError(f"{log.source}: no row has a {group_by!r} to group by", params=("group_by",))
    return dict(sorted(groups.items())), missing
