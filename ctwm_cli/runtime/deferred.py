"""Import one module of a package without running the package's ``__init__`` until it is needed.

Why (issue 29): the audit needs a handful of compiled functions from two scipy packages, but
``import scipy.special`` costs ~0.15 s and 20 MiB before any of them runs. Its ``__init__`` loads
scipy's array-API layer, which clones numpy's namespace and so imports ``numpy.f2py`` and
``numpy.testing``; ``scipy.optimize``'s loads every solver to reach L-BFGS-B's engine. The modules
that hold the functions (``scipy.special._ufuncs``, ``scipy.special.cython_special``,
``scipy.optimize._lbfgsb``) need none of that.

What: :func:`submodule` imports ``package.child`` through the ordinary import system, with the package
in ``sys.modules`` as a real module object made from the package's own spec, whose ``__init__`` has
not run yet. The package's ``__path__``, ``__spec__`` and already-imported children are there; the
first lookup of any other name (``scipy.special.gammaln``, ``from scipy.special import *``, ``dir()``,
``scipy.stats`` importing ``scipy.special``) runs ``__init__`` in that same module object, once, and
answers from the result. So the package ends up exactly as a plain import leaves it -- the same module,
the same children, every attribute -- only later (tests/test_deferred.py).

The ``__init__`` runs under the import system's own lock for that module, marked as initialising, as a
plain import runs it: another thread importing or using the package waits for it, and Python's
deadlock detection between module locks covers it. A failing ``__init__`` leaves ``sys.modules`` and
its parent package, as a failed import does. Before the first use, ``vars()`` and ``__doc__`` show only
what is there yet. When the package is already imported, or is not a package, this is a plain import.
"""

from __future__ import annotations

import importlib
import importlib._bootstrap
import importlib.util
import sys
import threading
import types
from contextlib import AbstractContextManager

_RUNNING: set[str] = set()  # packages whose __init__ is running (lookups from inside it must not recurse)
_FALLBACK = threading.RLock()
_DEADLOCK = getattr(importlib._bootstrap, "_DeadlockError", ())  # () catches nothing


def _module_lock(name: str) -> AbstractContextManager:
    """The import system's lock for module ``name`` (what a plain import of it holds); a process-wide
    lock on a Python without that private helper."""
    manager = getattr(importlib._bootstrap, "_ModuleLockManager", None)
    return manager(name) if manager is not None else _FALLBACK


class _DeferredPackage(types.ModuleType):
    """A package module whose ``__init__`` runs at the first lookup of a name it does not hold yet."""

    def __getattr__(self, name: str):
        # only called when ordinary lookup fails; a dunder other than __all__ is never one __init__ sets
        # for lookups like copy's or inspect's, so those do not trigger it
        if name.startswith("__") and name.endswith("__") and name != "__all__":
            raise AttributeError(name)
        initialise(self)
        return types.ModuleType.__getattribute__(self, name)

    def __dir__(self):
        initialise(self)
        return types.ModuleType.__dir__(self)


def initialise(package: types.ModuleType) -> None:
    """Run a deferred package's ``__init__`` now (nothing if it has run or is running in this thread;
    another thread's run is waited for)."""
    name = package.__name__
    if type(package) is not _DeferredPackage:
        return
    try:
        with _module_lock(name):  # re-entrant for the thread that holds it
            if type(package) is not _DeferredPackage or name in _RUNNING:
                return  # run meanwhile by another thread, or running in this one
            if "__builtins__" in vars(package):  # executed already (importlib.reload): nothing left to run
                package.__class__ = types.ModuleType
                return
            _run(package)
    except _DEADLOCK:
        return  # two threads' imports in a cycle: as a plain import, the module is used as it is so far


def _run(package: types.ModuleType) -> None:
    spec = package.__spec__
    _RUNNING.add(package.__name__)
    spec._initializing = True
    try:
        spec.loader.exec_module(package)
    except BaseException:
        _forget(package)
        raise
    finally:
        spec._initializing = False
        _RUNNING.discard(package.__name__)
        if type(package) is _DeferredPackage:  # unless __init__ set a class of its own
            package.__class__ = types.ModuleType


def _forget(package: types.ModuleType) -> None:
    """As after a failed import: the package is neither in ``sys.modules`` nor an attribute of its parent,
    so the next import runs (and fails) again."""
    name = package.__name__
    if sys.modules.get(name) is package:
        del sys.modules[name]
    above, _, last = name.rpartition(".")
    parent = sys.modules.get(above) if above else None
    if parent is not None and vars(parent).get(last) is package:
        delattr(parent, last)


def is_deferred(package: types.ModuleType) -> bool:
    """True while ``package``'s ``__init__`` has not run (nor is running)."""
    return type(package) is _DeferredPackage and package.__name__ not in _RUNNING


def submodule(name: str) -> types.ModuleType:
    """``importlib.import_module(name)``, leaving ``name``'s parent package's ``__init__`` for later."""
    parent = name.rpartition(".")[0]
    if not parent or parent in sys.modules:
        return importlib.import_module(name)
    grand, _, last = parent.rpartition(".")
    above = importlib.import_module(grand) if grand else None
    with _module_lock(parent):  # as a plain import of the package would hold it
        if parent not in sys.modules:
            spec = importlib.util.find_spec(parent)
            if spec is None or spec.loader is None or spec.submodule_search_locations is None:
                return importlib.import_module(name)
            package = importlib.util.module_from_spec(spec)
            package.__class__ = _DeferredPackage
            sys.modules[parent] = package
            if above is not None:
                setattr(above, last, package)
    try:
        return importlib.import_module(name)
    except ImportError:
        # the child needs its package after all, or is not there: the plain import decides
        deferred = sys.modules.get(parent)
        if deferred is not None:
            initialise(deferred)
        return importlib.import_module(name)
