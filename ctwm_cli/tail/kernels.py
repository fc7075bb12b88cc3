"""The tail's numba kernels, compiled only when a command runs enough of them to pay for numba.

Loading numba costs about 0.45 s and 90 MiB in a fresh process, measured on this project's machine at
load ~2 (``ctwm audit --bootstrap 0`` of 10^5 Zipf counts went from 290 to 197 MiB peak without it;
``benchmarks/bench_startup.py`` times it apart): ``import numba`` 0.15-0.25 s, then the first call of
any cached kernel sets up numba's typing and target contexts (0.22-0.24 s), however small the kernel. A single audit
without replicates (``ctwm audit --bootstrap 0``) of a histogram with a few hundred distinct values runs
its kernels as plain Python in 0.02-0.2 s (0.06 s for 10^5 Zipf counts with 235 distinct values), so
there numba is the larger part of the wall time.

So every kernel is declared with :func:`kernel` instead of ``numba.njit``: a :class:`Kernel` that, on
its first call, imports numba and compiles (or loads from numba's on-disk cache) *every* kernel, then
rebinds each module-level name that held a :class:`Kernel` to its numba dispatcher - compiled kernels
call one another through those globals, so they must all be dispatchers at once. Inside
:func:`interpreted` the kernels run as Python (``py_func``) instead, unless they are compiled already.

Both ways give the same floats, bit for bit: the kernels use scalar IEEE arithmetic and libm's
``exp``/``log``/``pow`` (numba lowers ``math`` calls and ``**`` to the same libm functions, and no
kernel sets ``fastmath``), and their loops sum in the same order. ``tests/test_tail_kernels.py``
checks it against the scan golden data and on audits.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..runtime.deferred import submodule

OPTIONS = {"cache": True, "nogil": True}  # numba.njit options of every kernel (fastmath stays off)
#: a histogram with at most this many distinct values is audited without numba when nothing is
#: replicated: measured 0.02-0.2 s interpreted up to 1,500 distinct values against numba's ~0.45 s set-up
INTERPRETED_MAX_DISTINCT = 1500

KERNELS: list[Kernel] = []
_LOCK = threading.RLock()
_STATE = {"compiled": False, "interpreted": 0}


class Kernel:
    """A numba kernel not compiled yet: calls run ``py_func`` inside :func:`interpreted`, else compile."""

    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.py_func = func
        self.options = options
        self.dispatcher: Any = None
        functools.update_wrapper(self, func)
        KERNELS.append(self)

    def __call__(self, *args: Any) -> Any:
        if self.dispatcher is None and _STATE["interpreted"]:
            return self.py_func(*args)
        compile_all()
        return self.dispatcher(*args)

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:  # pickled by name, like a function
        return _by_name, (self.py_func.__module__, self.py_func.__qualname__)

    def __repr__(self) -> str:
        return f"<kernel {self.py_func.__module__}.{self.py_func.__qualname__}>"


def _by_name(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


def kernel(func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Declare a kernel (``@kernel`` or ``@kernel(fastmath=False)``); options go to ``numba.njit``."""
    if func is None:
        return lambda f: Kernel(f, {**OPTIONS, **options})
    return Kernel(func, dict(OPTIONS))


def compile_all() -> None:
    """Import numba, compile (or load from its cache) every kernel, and rebind the module-level names
    of ``ctwm_cli`` that held a :class:`Kernel` to the dispatchers."""
    if _STATE["compiled"]:
        return
    with _LOCK:
        if _STATE["compiled"]:
            return
        # numba checks for BLAS by importing scipy.linalg.cython_blas, which would run scipy.linalg's
        # __init__ and its array-API layer (~0.1 s, 15 MiB) for kernels that call no BLAS
        submodule("scipy.linalg.cython_blas")
        import numba  # the one place numba loads (see the module doc)

        for k in KERNELS:
            k.dispatcher = numba.njit(**k.options)(k.py_func)
        for name, module in list(sys.modules.items()):
            if name == "ctwm_cli" or name.startswith("ctwm_cli."):
                space = vars(module)
                for key, value in list(space.items()):
                    if isinstance(value, Kernel):
                        space[key] = value.dispatcher
        _STATE["compiled"] = True


def compiled() -> bool:
    """Whether numba has been loaded for the kernels in this process."""
    return bool(_STATE["compiled"])


@contextlib.contextmanager
def interpreted(when: bool = True) -> Iterator[None]:
    """Run kernels as plain Python inside this block (when ``when``; kernels compiled already stay so)."""
    if not when:
        yield
        return
    with _LOCK:
        _STATE["interpreted"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["interpreted"] -= 1
