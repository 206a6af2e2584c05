"""Reading an import file in each format: the thin shell around :mod:`generators.importers`.

Every reader returns the file's records in the OpenAI-chat shape the one importer reads, each
with where it is in the file, or the reason it cannot be imported (skipped and named).
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from generators.importers import adp, inspect_log, otel, tau2
from warehouse.errors import InputError
from warehouse.jsonfile import document_and_items, stream_records

ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first member, or an empty zip's end record
MEMBER_LIMIT = 256 * 2**20  # an .eval member that decompresses to more is refused (a zip bomb, not a log)


class MemberTooLarge(Exception):
    """A zip member decompresses to more than :data:`MEMBER_LIMIT`."""


def read_member(zf: zipfile.ZipFile, name: str, limit: int | None = None) -> bytes:
    """A member's bytes, read no further than ``limit`` (default :data:`MEMBER_LIMIT`): the size a zip
    declares may lie, so the bytes are counted as they come."""
    limit = MEMBER_LIMIT if limit is None else limit
    if zf.getinfo(name).file_size > limit:
        raise MemberTooLarge(name)
    with zf.open(name) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise MemberTooLarge(name)
    return data


def _starts_as_zip(path: Path) -> bool:
    """Whether ``path`` begins as a zip does: a cut-short ``.eval`` log is a zip without its end."""
    try:
        with path.open("rb") as f:
            return f.read(4) in ZIP_STARTS
    except OSError:
        return False  # the JSON reader says why it cannot be read


def read_inspect(path: Path, scorer: str | None = None) -> Iterable[Any]:
    """An Inspect log: a ``.eval`` zip (``header.json``, ``samples/*.json``) or a ``.json`` log."""
    if _starts_as_zip(path) or zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
                header = json.loads(read_member(zf, "header.json")) if "header.json" in names else {}
                samples: list[tuple[str, Any]] = []
                for name in sorted(n for n in names if n.startswith("samples/") and n.endswith(".json")):
                    try:
                        samples.append((name, json.loads(read_member(zf, name))))
                    except ValueError as exc:
                        samples.append((name, ValueError(f"not JSON: {exc}")))
                    except RecursionError:
                        samples.append((name, ValueError("nested too deeply to read")))
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:  # the archive's structure, or a member's data
            why = "its end, the zip's directory, is missing" if str(exc) == "File is not a zip file" else exc
            raise InputError(f"{path}: a damaged or truncated zip archive, not a readable Inspect .eval log "
                             f"({why})") from None
        except RecursionError:
            raise InputError(f"{path}: header.json is nested too deeply to read") from None
        except MemberTooLarge as exc:
            raise InputError(f"{path}: member {exc} decompresses to more than {MEMBER_LIMIT // 2**20} MB; refused "
                             "(an Inspect sample is far smaller: a damaged or hostile archive)") from None
        except (OSError, ValueError, NotImplementedError, RuntimeError) as exc:  # header.json not JSON, encrypted, ...
            raise InputError(f"{path}: not a readable Inspect .eval log ({exc})") from None
        if not samples:
            raise InputError(f"{path}: an Inspect .eval log without samples/*.json")
        return inspect_log.records(header if isinstance(header, dict) else {}, samples, scorer=scorer)
    log, samples = document_and_items(path, "samples")
    if not isinstance(log, dict) or not isinstance(log.get("samples"), list):
        raise InputError(f"{path}: not an Inspect eval log (a .eval zip, or JSON with a 'samples' list)")
    return inspect_log.records(log, ((f"sample {i}", s) for i, s in enumerate(samples, start=1)), scorer=scorer)


def read_tau2(path: Path, scorer: str | None = None) -> Iterable[Any]:
    """τ²-bench results: the document, its simulations one at a time."""
    results, simulations = document_and_items(path, "simulations")
    return tau2.records(results, simulations, str(path))


# format -> reader (path, scorer) -> records, read one at a time (a JSON Lines line, a JSON list's item, a
# document's simulations or samples), except otel's: a conversation's spans may be anywhere in the file
READERS: dict[str, Callable[[Path, str | None], Iterable[Any]]] = {
    "openai-chat": lambda path, scorer: stream_records(path),
    "inspect": read_inspect,
    "tau2": read_tau2,
    "otel": lambda path, scorer: otel.records(stream_records(path), str(path), scorer),
    "adp": lambda path, scorer: adp.records(stream_records(path)),
}
