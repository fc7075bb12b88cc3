"""Dask as a backend of :mod:`ctwm_cli.runtime.parallel` (the ``dask`` extra): bootstrap and calibration
replicates and group audits run as Dask tasks on a cluster, never on a scheduler of our own.

``scheduler`` is ``tcp://HOST:PORT`` (or another Dask address) of a running cluster — Kubernetes,
dask-jobqueue, ``dask scheduler`` by hand — or ``local`` for a :class:`distributed.LocalCluster`
on this machine. Each task carries its own child seed and results are put back in task order, so
a run on a cluster gives the same numbers as a local run with the same seed.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..common.errors import InputError, UsageError
from .parallel import BACKENDS, Deliver, single_blas_thread, using_backend

_PROTOCOLS = ("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")
_CLIENT: contextvars.ContextVar[Any] = contextvars.ContextVar("ctwm_dask_client", default=None)


def check_scheduler(address: str | None) -> str | None:
    """``address`` if it is ``local`` or a Dask scheduler URL, else a :class:`UsageError`."""
    if address is None:
        return None
    if not isinstance(address, str) or not (address == "local" or address.startswith(_PROTOCOLS)):
        raise UsageError(f"scheduler must be tcp://HOST:PORT of a Dask scheduler or local, got {address!r}",
                         params=("scheduler",))
    return address


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise UsageError("a Dask scheduler needs the dask extra: pip install 'ctwm[dask]'", params=()) from None
    return distributed


@contextlib.contextmanager
def dask_client(address: str | None, *, workers: int | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` for ``address`` (``local``: a LocalCluster of ``workers`` processes,
    default one per core, bound to 127.0.0.1), closed on exit; ``None`` yields ``None``."""
    if check_scheduler(address) is None:
        yield None
        return
    if _CLIENT.get() is not None:  # inside using_scheduler: share its cluster
        yield _CLIENT.get()
        return
    distributed = _import_distributed()
    cluster = None
    try:
        if address == "local":
            cluster = distributed.LocalCluster(
                n_workers=workers or max(1, os.cpu_count() or 1), threads_per_worker=1, processes=True,
                host="127.0.0.1", dashboard_address=None, silence_logs=logging.CRITICAL,
            )
            client = distributed.Client(cluster)
        else:
            client = distributed.Client(address, timeout=10)
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        raise InputError(f"scheduler {address}: cannot connect ({exc})") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def using_scheduler(address: str | None, *, workers: int | None = None) -> Iterator[Any]:
    """Inside the block, :func:`ctwm_cli.runtime.parallel.run_tasks` runs on this Dask scheduler."""
    with dask_client(address, workers=workers) as client:
        if client is None:
            yield None
            return
        token = _CLIENT.set(client)
        try:
            with using_backend("dask"):
                yield client
        finally:
            _CLIENT.reset(token)


def _one_blas_thread(fn: Callable[[Any], Any], task: Any) -> Any:
    with single_blas_thread():
        return fn(task)


def _run_dask(fn: Callable[[Any], Any], tasks: Sequence[Any], jobs: int, deliver: Deliver) -> None:
    """Submit every task to the active client; deliver results as they complete (``jobs`` is the
    cluster's business). On any exception the pending futures are cancelled."""
    client = _CLIENT.get()
    if client is None:
        raise UsageError("the dask backend needs a scheduler (using_scheduler)", params=())
    from distributed import as_completed

    futures = client.map(functools.partial(_one_blas_thread, fn), list(tasks), pure=False)
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        for fut in as_completed(futures):
            deliver(index[fut.key], fut.result())
    except BaseException:
        client.cancel(futures)
        raise


BACKENDS["dask"] = _run_dask
