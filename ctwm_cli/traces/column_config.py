"""A project's column map (issue 41): ``[columns]`` in ``ctwm.toml``, else ``[tool.ctwm.columns]`` in
``pyproject.toml``.

    [columns]
    item = "memory_id"
    step = "agent_step"

Found the way ``ctwm check`` finds its config (``./ctwm.toml``, else ``./pyproject.toml``'s ``[tool.ctwm]``, in the
working directory), and applied to every command run there; a flag overrides an entry. A config may arrive in a
pull request, so it is confined like every config value: keys are the trace schema's fields (a typo is a usage
error with a did-you-mean), values are column names only (text, no path separator, URL or control character),
and nothing else is read.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any

from ..common.errors import InputError, UsageError
from ..common.inert import visible
from .schema import FIELDS

MAX_NAME = 200
_FORBIDDEN = ("/", "\\", "://", "\x00")


def project_columns(directory: str | Path = ".") -> tuple[dict[str, str], str | None]:
    """(``{field: column}``, where it came from, e.g. ``ctwm.toml [columns]``) of the project in ``directory``;
    an empty map and None when it has none."""
    base = Path(directory)
    toml, pyproject = base / "ctwm.toml", base / "pyproject.toml"
    if toml.is_file():
        return _checked(_load(toml).get("columns"), "ctwm.toml [columns]")
    if pyproject.is_file():
        table = _load(pyproject).get("tool", {}).get("ctwm", {})
        return _checked(table.get("columns") if isinstance(table, dict) else None, "pyproject.toml [tool.ctwm.columns]")
    return {}, None


def _load(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise InputError(f"{path.name}: {visible(str(exc))}") from None


def _checked(table: Any, where: str) -> tuple[dict[str, str], str | None]:
    if table is None:
        return {}, None
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table of field = \"column\"", params=())
    out = {}
    for key, value in table.items():
        if key not in FIELDS:
            close = difflib.get_close_matches(key, FIELDS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (fields: {', '.join(FIELDS)})"
            raise UsageError(f"{where}: unknown field {visible(key)!r}{hint}", params=())
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME:
            raise UsageError(f"{where}: {key} must be a column name (text of 1 to {MAX_NAME} characters)", params=())
        if any(bad in value for bad in _FORBIDDEN) or visible(value) != value:
            raise UsageError(f"{where}: {key} = {visible(value)!r} is not a column name (no paths, URLs or control "
                             "characters)", params=())
        out[key] = value
    return out, (where if out else None)
