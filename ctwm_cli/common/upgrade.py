"""Results saved by the ctwm of an older schema version, read in this version's names: the one place a saved
document's renamed keys are given their new names (``ctwm diff``, ``report --diff``, the baseline reader,
``bench report`` and the replay report all read through :func:`upgrade`).

Schema version 3 (issue 43) renamed, with nothing added or dropped:

* ``interval`` -> ``interval_status`` wherever it held a status string ("formed", or why no interval was formed:
  paired comparisons, ``replay frozen``'s trajectory terms, ``replay pareto``, ``bench longmemeval``), and
  ``bench report``'s ``quality_interval`` -> ``quality_interval_status``. Where ``interval`` holds an interval
  (``audit --power``'s ``curves[].interval``) it keeps its name;
* an audit result's ``label`` -> ``source`` and ``n`` -> ``n_items`` (``ctwm audit``'s ``results[]``). Version 3
  also writes a group's audit as ``source`` and ``group`` apart, as ``concentration`` does; a version-2 label of a
  group (``x.parquet[run-1]``) is kept whole as its ``source`` (a bracket in a name cannot be told from a group),
  which names the same subject: ``ctwm diff`` pairs it with version 3's ``source[group]``;
* ``ctwm health``'s flat pairs ``failure_attribution_ci`` ``[low, high]`` (Newcombe, at 0.95) and growth's
  ``rate_trend_ci`` (at growth's ``level``) -> ``failure_attribution_confidence_interval`` and
  ``rate_trend_confidence_interval``, the vocabulary's ``{low, high, level}`` (``null`` where no interval was
  formed), and growth's ``bins`` (a count) -> ``n_bins``.
"""

from __future__ import annotations

from typing import Any

from .results import SCHEMA_VERSION

#: the schema versions a saved result may carry and still be read (older ones: re-run the command)
READABLE_VERSIONS = (2, SCHEMA_VERSION)
#: keys renamed in version 3 wherever their value is a status string
STATUS_RENAMED = {"interval": "interval_status", "quality_interval": "quality_interval_status"}
#: flat ``[low, high]`` pairs renamed in version 3 to ``{low, high, level}`` objects: new name, and the level
#: (a number, or the name of the sibling key that holds it)
PAIRS_RENAMED: dict[str, tuple[str, float | str]] = {
    "failure_attribution_ci": ("failure_attribution_confidence_interval", 0.95),
    "rate_trend_ci": ("rate_trend_confidence_interval", "level"),
}
#: keys of each audit result (``ctwm audit``'s ``results[]``) renamed in version 3
AUDIT_RENAMED = {"label": "source", "n": "n_items"}


def upgrade(doc: Any) -> Any:
    """``doc`` (a parsed ``ctwm ... --json`` document) in this version's names: a version-2 document comes back as
    a new document of version 3 with every renamed key under its new name and every value kept; anything else
    (this version, another version, not a ctwm document) is returned as it is, for the caller to accept or refuse.
    The input is never modified."""
    if not isinstance(doc, dict) or doc.get("schema_version") != 2:
        return doc
    out = _statuses_renamed(doc)
    if out.get("command") == "audit" and isinstance(out.get("results"), list):
        out["results"] = [_renamed(r, AUDIT_RENAMED) if isinstance(r, dict) else r for r in out["results"]]
    out["schema_version"] = SCHEMA_VERSION
    return out


def renamed(name: str, known: Any) -> list[str]:
    """``[new name]`` when ``name`` is a metric's name of version 2 and its new name is among ``known`` (a
    ``--fail-on n<100`` or ``--tol n=5`` written for the old names gets the new one as its did-you-mean)."""
    new = AUDIT_RENAMED.get(name)
    return [new] if new is not None and new in known else []


def _renamed(obj: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``obj`` with its keys renamed in place order; a key whose new name is already there keeps its old name."""
    return {(names[k] if k in names and names[k] not in obj else k): v for k, v in obj.items()}


def _shell(value: Any) -> Any:
    return {} if isinstance(value, dict) else [] if isinstance(value, list) else value


def _statuses_renamed(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``doc`` with :data:`STATUS_RENAMED` applied at every depth (a loop, not recursion: a saved
    document nested as deep as the JSON parser allows cannot exhaust the stack here)."""
    top = _shell(doc)
    stack = [(doc, top)]
    while stack:
        src, dst = stack.pop()
        for key, value in (src.items() if isinstance(src, dict) else enumerate(src)):
            new = _shell(value)
            if isinstance(src, dict) and key in PAIRS_RENAMED and (value is None or _pair(value)):
                name, level = PAIRS_RENAMED[key]
                dst[name] = _interval(value, src.get(level) if isinstance(level, str) else level)
                continue
            if isinstance(src, dict):
                renamed = STATUS_RENAMED.get(key)
                if key == "bins" and "rate_trend_ci" in src and isinstance(value, int):
                    renamed = "n_bins"  # health growth's count of bins (success_curve.bins is a list, kept)
                moved = renamed is not None and (isinstance(value, str) or renamed == "n_bins") and renamed not in src
                dst[renamed if moved else key] = new
            else:
                dst.append(new)
            if isinstance(value, (dict, list)):
                stack.append((value, new))
    return top


def _pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(v is None or isinstance(v, (int, float)) for v in value)


def _interval(pair: list | None, level: Any) -> dict[str, Any] | None:
    """A version-2 ``[low, high]`` as ``{low, high, level}``; ``None`` where it was not formed (a bound null)."""
    if pair is None:
        return None
    low, high = pair
    if low is None or high is None or not isinstance(level, (int, float)):
        return None
    return {"low": low, "high": high, "level": level}
