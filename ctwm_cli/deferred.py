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
first lookup of any other name (``scipy.special.gammaln``, ``from scipy.special import *``,
``scipy.stats`` importing ``scipy.special``) runs ``__init__`` in that same module object, once, under a
lock, and answers from the result. So the package ends up exactly as a plain import leaves it -- the same
module, the same children, every attribute -- only later. The ufuncs the audit calls are the very
objects ``scipy.special`` exports (tests/test_deferred.py).

When the package is already imported, or cannot be found as a package, this is a plain import.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types

_LOCK = threading.RLock()
_RUNNING: set[str] = set()  # packages whose __init__ is running now (lookups from inside it must not recurse)


class _DeferredPackage(types.ModuleType):
    """A package module whose ``__init__`` runs at the first lookup of a name it does not hold yet."""

    def __getattr__(self, name: str):
        # only called when ordinary lookup fails; a dunder other than __all__ is never one __init__ sets
        # for lookups like copy's or inspect's, so those do not trigger it
        if name.startswith("__") and name.endswith("__") and name != "__all__":
            raise AttributeError(name)
        initialise(self)
        return types.ModuleType.__getattribute__(self, name)


def initialise(package: types.ModuleType) -> None:
    """Run a deferred package's ``__init__`` now (nothing if it has run or is running)."""
    with _LOCK:
        if type(package) is not _DeferredPackage or package.__name__ in _RUNNING:
            return
        _RUNNING.add(package.__name__)
        try:
            package.__spec__.loader.exec_module(package)
        except BaseException:
            # as a failed import does: the package leaves sys.modules, so the next import raises again
            if sys.modules.get(package.__name__) is package:
                del sys.modules[package.__name__]
            raise
        finally:
            _RUNNING.discard(package.__name__)
            package.__class__ = types.ModuleType


def is_deferred(package: types.ModuleType) -> bool:
    """True while ``package``'s ``__init__`` has not run (nor is running)."""
    return type(package) is _DeferredPackage and package.__name__ not in _RUNNING


def submodule(name: str) -> types.ModuleType:
    """``importlib.import_module(name)``, leaving ``name``'s parent package's ``__init__`` for later."""
    parent = name.rpartition(".")[0]
    if not parent or parent in sys.modules:
        return importlib.import_module(name)
    with _LOCK:
        if parent in sys.modules:
            return importlib.import_module(name)
        grand, _, last = parent.rpartition(".")
        above = importlib.import_module(grand) if grand else None
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
            initialise(package)
            return importlib.import_module(name)
