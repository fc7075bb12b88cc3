"""Your own memory policy: ``ctwm replay compare --memory package.module:ClassName`` or
``--memory path/to/file.py:ClassName``, run beside the built-in policies on the same episodes.

**The protocol** (:class:`~ctwm_cli.memory.MemoryPolicy`; subclass it, or give a class the same
methods). The class is constructed once per arm and episode as
``ClassName(memory, budget=..., k=..., core=..., tau=..., max_candidates=..., seed=...)``, where
``memory`` is the episode's :class:`~ctwm_cli.memory.EpisodicMemory`, empty at step 0 (accept
``**kwargs``: more keywords may be passed in later releases). At every step ``t`` the replay calls

1. ``retrieve(state, action) -> Retrieval``: the ranked transition ids (``memory`` holds the ids
   written so far) and their scores, rank 1 first. It must not depend on the encoding;
2. ``render(retrieval, state, action, encoding, counter) -> Prompt``: the prompt under the encoding
   and ``self.budget``. :class:`MemoryPolicy` gives one (ranked lines while they fit), so a subclass
   needs only ``retrieve``;
3. optionally ``retrieve_state(state)`` (a closed-loop agent deciding which action to take; default
   ``retrieve(state, 0)``) and ``observe(tid, step)`` (called after every write, for a policy that
   keeps a store of its own);

then writes the step's transition into ``memory``. What ``memory`` offers, and will keep offering
(a change goes through a deprecation release): ``world`` (``size``, ``n_transitions``,
``tid_src``/``tid_dst``/``tid_local``/``tid_action`` per transition id, ``places``,
``action_names``), ``history`` (the tids written, in order), ``freq[tid]`` (times written),
``last[tid]`` (step last written, -1 never), ``out[state]`` / ``into[state]`` (stored tids out of
and into a state), ``by_action[global action]`` (stored outcomes of an action, global action =
``world.act_ptr[state] + action``), ``act_ptr``, ``degree(state)`` and ``has_state(state)``.

**Trust.** Loading a policy imports and runs the code the spec names, as ``python -c "import
module"`` would: it is for a spec the user typed. No config file (``ctwm.toml``, ``[tool.ctwm]``)
can name one; :func:`load_policy` is never called with a config's value.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

from ..common.errors import UsageError

__all__ = ["is_policy_spec", "load_policy"]

_LOADED: dict[str, type] = {}


def is_policy_spec(name: str) -> bool:
    """``package.module:ClassName`` or ``path/to/file.py:ClassName`` (a built-in name has no colon)."""
    return isinstance(name, str) and ":" in name


def _module(target: str, spec: str):
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = Path(target).expanduser()
        if not path.is_file():
            raise UsageError(f"memory policy {spec!r}: no file {target}", params=("memory",))
        name = "ctwm_user_policy_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
        if name in sys.modules:
            return sys.modules[name]
        loader = importlib.util.spec_from_file_location(name, path)
        if loader is None or loader.loader is None:
            raise UsageError(f"memory policy {spec!r}: {target} is not a Python file", params=("memory",))
        module = importlib.util.module_from_spec(loader)
        sys.modules[name] = module
        try:
            loader.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module
    return importlib.import_module(target)


def load_policy(spec: str) -> type:
    """The class ``spec`` names, checked against the protocol (see the module docstring). Every failure,
    the user's own code raising included, is a one-line :class:`UsageError` naming the spec."""
    got = _LOADED.get(spec)
    if got is not None:
        return got
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise UsageError(f"memory policy {spec!r}: expected package.module:ClassName or path/to/file.py:ClassName",
                         params=("memory",))
    try:
        module = _module(target, spec)
    except UsageError:
        raise
    except Exception as exc:  # the user's module failed to import: say so in one line
        raise UsageError(f"memory policy {spec!r}: importing {target} failed: {type(exc).__name__}: {exc}",
                         params=("memory",)) from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise UsageError(f"memory policy {spec!r}: {target} has no {attr}", params=("memory",))
    if not isinstance(cls, type):
        raise UsageError(f"memory policy {spec!r}: {attr} is not a class", params=("memory",))
    missing = [m for m in ("retrieve", "render") if not callable(getattr(cls, m, None))]
    if missing:
        raise UsageError(f"memory policy {spec!r}: {attr} lacks the MemoryPolicy method(s) {', '.join(missing)} "
                         "(subclass ctwm_cli.memory.MemoryPolicy)", params=("memory",))
    _LOADED[spec] = cls
    return cls


def make_user_policy(spec: str, memory, **params):
    """An instance of the user's policy over ``memory`` (see the module docstring for ``params``)."""
    cls = load_policy(spec)
    try:
        return cls(memory, **params)
    except Exception as exc:
        raise UsageError(f"memory policy {spec!r}: constructing {cls.__name__} failed: {type(exc).__name__}: {exc}",
                         params=("memory",)) from None
