"""Input hardening in one place: every byte of JSON we read passes through here before a parser sees it.

Measured failure modes this prevents (issue 20): pyarrow's JSON reader segfaults at nesting depth
~20,000 and Python's ``json`` raises RecursionError from ~1,000; a gzip bomb with no newline was
buffered whole (3.5 GB RSS); invalid UTF-8 and lone surrogates (``\\ud800``) crashed the writers.

* **Nesting depth** ≤ :data:`MAX_DEPTH`. The count of ``{``/``[`` on a line bounds its depth from
  above, so most lines cost one vectorised pass; a line over the bound is measured exactly with its
  string literals removed first (a ``}`` inside a string cannot hide depth).
* **Line length** ≤ :data:`MAX_LINE_BYTES`: a longer line is refused as soon as that many bytes
  arrive without a newline, never buffered whole.
* **Streamed decompression** (gzip) with an expansion cap: once more than :data:`RATIO_FLOOR_BYTES`
  are out, output may not exceed :data:`MAX_EXPANSION` × the compressed bytes read.
* **Strict UTF-8**, and no lone surrogate escapes, with the file and line in the error.

Every failure is an :class:`~ctwm_cli.common.errors.InputError` (exit 3) of one line.
"""

from __future__ import annotations

import json
import re
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..common.errors import InputError

MAX_DEPTH = 64
MAX_LINE_BYTES = 64 << 20
MAX_DOCUMENT_BYTES = 512 << 20
MAX_EXPANSION = 200
RATIO_FLOOR_BYTES = 64 << 20
BLOCK_BYTES = 8 << 20

_DELTA = np.zeros(256, dtype=np.int32)
_DELTA[[ord("{"), ord("[")]] = 1
_DELTA[[ord("}"), ord("]")]] = -1
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def limit_error(source: str, where: str, what: str) -> InputError:
    return InputError(f"{source}: {where}: {what}")


class DecompressionGuard:
    """A readable binary stream that inflates gzip incrementally and enforces the expansion cap."""

    def __init__(self, raw: BinaryIO, source: str, *, gz: bool):
        self._raw = raw
        self._source = source
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if gz else None
        self._input = b""  # compressed bytes not yet fed (an unconsumed tail or the next member)
        self._buf = bytearray()
        self.read_in = 0
        self.written = 0

    def read(self, n: int) -> bytes:
        if self._inflate is None:
            data = self._raw.read(n)
            self.read_in += len(data)
            return data
        while len(self._buf) < n and self._fill():
            pass
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _fill(self) -> bool:
        """Inflate at most 1 MiB more; False at the end of the input."""
        assert self._inflate is not None
        if not self._input:
            self._input = self._raw.read(1 << 16)
            if not self._input:
                if not self._inflate.eof and self.read_in:
                    raise InputError(f"{self._source}: read error (compressed file is truncated)")
                return False
            self.read_in += len(self._input)
        try:
            data = self._inflate.decompress(self._input, 1 << 20)
        except zlib.error as exc:
            raise InputError(f"{self._source}: read error ({exc})") from None
        self._input = self._inflate.unconsumed_tail
        if self._inflate.eof and self._inflate.unused_data:  # concatenated gzip members
            self._input = self._inflate.unused_data
            self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._buf += data
        self.written += len(data)
        if self.written > RATIO_FLOOR_BYTES and self.written > MAX_EXPANSION * max(1, self.read_in):
            raise InputError(
                f"{self._source}: decompressed size exceeds {MAX_EXPANSION}x the compressed size "
                f"({self.written:,} bytes from {self.read_in:,}); refusing a likely decompression bomb"
            )
        return True

    def close(self) -> None:
        self._raw.close()


def open_guarded(path: str | Path, source: str | None = None) -> DecompressionGuard:
    """Open a local file (``.gz`` or gzip magic: inflated, capped) as a guarded stream."""
    p = Path(path)
    source = source or str(path)
    try:
        if not stat.S_ISREG(p.stat().st_mode):  # a FIFO without a writer would block the open forever
            raise InputError(f"{source}: not a regular file; pass - to read standard input")
        fh = p.open("rb")
        head = fh.read(2)
        fh.seek(0)
    except OSError as exc:
        raise InputError(f"{source}: cannot open ({first_line(exc)})") from None
    return DecompressionGuard(fh, source, gz=p.name.lower().endswith(".gz") or head == b"\x1f\x8b")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def checked_blocks(stream, source: str, *, block_bytes: int | None = None) -> Iterator[tuple[int, bytes]]:
    """``(first line number, block of whole lines)`` from ``stream``, every line checked."""
    block_bytes = block_bytes or BLOCK_BYTES
    line_no = 1
    rest = b""
    while True:
        try:
            data = stream.read(block_bytes)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{source}: read error ({first_line(exc)})") from None
        if data:
            data = rest + data
            cut = data.rfind(b"\n")
            if cut < 0:
                if len(data) > MAX_LINE_BYTES:
                    raise limit_error(source, f"line {line_no}", f"line longer than {MAX_LINE_BYTES:,} bytes")
                rest = data
                continue
            block, rest = data[: cut + 1], data[cut + 1 :]
        else:
            block, rest = rest, b""
        if block:
            check_block(block, source, line_no)
            yield line_no, block
            line_no += block.count(b"\n")
        if len(rest) > MAX_LINE_BYTES:
            raise limit_error(source, f"line {line_no}", f"line longer than {MAX_LINE_BYTES:,} bytes")
        if not data:
            return


def check_block(block: bytes, source: str, line_no: int) -> None:
    """Line length, nesting depth, UTF-8 and surrogates of every line of ``block``."""
    arr = np.frombuffer(block, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    ends = np.append(nl, arr.size) if (nl.size == 0 or nl[-1] != arr.size - 1) else nl
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts
    if lengths.size and lengths.max() > MAX_LINE_BYTES:
        k = int(np.argmax(lengths > MAX_LINE_BYTES))
        raise limit_error(source, f"line {line_no + k}", f"line longer than {MAX_LINE_BYTES:,} bytes")
    # Openers per line bound its depth; they are few (about one per trace record), so count their
    # positions per line instead of summing over every byte. Trace records rarely hold ``[``, so
    # its positions are taken (and merged) only when the block has one. A line with more than
    # MAX_DEPTH openers holds MAX_DEPTH + 1 of them within its length, so when every such run of
    # openers spans more than the longest line, no line can (one subtraction instead of locating
    # every opener's line: ~40% of this function).
    where = np.flatnonzero(arr == 123)
    if b"[" in block:
        where = np.sort(np.concatenate((where, np.flatnonzero(arr == 91))))
    if where.size <= MAX_DEPTH or (where[MAX_DEPTH:] - where[:-MAX_DEPTH]).min() > lengths.max():
        per_line = np.zeros(1, int)
    else:
        per_line = np.bincount(np.searchsorted(ends, where), minlength=ends.size)
    for k in np.flatnonzero(per_line > MAX_DEPTH):
        line = block[starts[k] : ends[k]]
        if json_depth(line) > MAX_DEPTH:
            raise limit_error(source, f"line {line_no + int(k)}", f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        if not block.isascii():
            block.decode("utf-8")
    except UnicodeDecodeError as exc:
        k = block.count(b"\n", 0, exc.start)
        raise limit_error(source, f"line {line_no + k}", "not valid UTF-8") from None
    for m in _SURROGATE.finditer(block):
        k = block.count(b"\n", 0, m.start())
        s, e = int(starts[k]), int(ends[k])
        if has_lone_surrogate(block[s:e]):
            raise limit_error(source, f"line {line_no + k}", "lone UTF-16 surrogate escape (not valid Unicode)")


def json_depth(text: bytes, *, chunk: int = 1 << 22) -> int:
    """Exact maximum nesting depth of the JSON text (string literals removed first), in chunks so a
    long document costs a few MiB of working memory, not eight bytes per byte."""
    bare = _STRING.sub(b'""', text)
    depth = deepest = 0
    for start in range(0, len(bare), chunk):
        part = np.frombuffer(bare, dtype=np.uint8, count=min(chunk, len(bare) - start), offset=start)
        run = np.cumsum(_DELTA[part], dtype=np.int64) + depth
        deepest = max(deepest, int(run.max()))
        depth = int(run[-1])
    return max(0, deepest)


def has_lone_surrogate(line: bytes) -> bool:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return False  # malformed: the parser reports it
    return _contains_surrogate(value)


def _contains_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_contains_surrogate(k) or _contains_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_contains_surrogate(v) for v in value)
    return False


def read_document(path: str | Path, source: str | None = None, *, limit: int | None = None) -> bytes:
    """The (inflated) bytes of a JSON file, every line checked; at most ``limit`` bytes when given."""
    source = source or str(path)
    stream = open_guarded(path, source)
    parts: list[bytes] = []
    size = 0
    try:
        if limit is not None:
            return stream.read(limit)
        for _, block in checked_blocks(stream, source):
            size += len(block)
            if size > MAX_DOCUMENT_BYTES:
                raise InputError(f"{source}: larger than {MAX_DOCUMENT_BYTES:,} bytes; split it into JSON lines")
            parts.append(block)
    finally:
        stream.close()
    return b"".join(parts)


def load_json(data: bytes, source: str, where: str | None = None) -> Any:
    """``json.loads`` of checked bytes (a BOM allowed), errors naming the file (and ``where``)."""
    prefix = f"{source}: {where}" if where else source
    try:
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputError(f"{prefix}: not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{prefix}: malformed JSON ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{prefix}: JSON nested deeper than {MAX_DEPTH} levels") from None


def load_json_documents(path: str | Path, source: str | None = None) -> list[tuple[str, Any]]:
    """One JSON document (``[("document", doc)]``), or JSON lines (``[("line N", doc), ...]``)."""
    source = source or str(path)
    raw = read_document(path, source)
    if not raw.strip():
        raise InputError(f"{source}: file is empty")
    if json_depth(raw) > MAX_DEPTH:
        raise InputError(f"{source}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return [("document", json.loads(raw.decode("utf-8-sig")))]
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    docs = []
    for i, line in enumerate(raw.split(b"\n"), 1):
        if line.strip():
            docs.append((f"line {i}", load_json(line, source, f"line {i}")))
    return docs
