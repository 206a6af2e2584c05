"""The training rows of a ``trl`` export, as ``datasets`` loads them for TRL's SFT trainer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from warehouse.errors import InputError

TRL_FOLDER = "trl-sft"


def trl_export_dir(path: Path) -> Path:
    """The folder of a ``trl`` export: ``path`` itself, or its ``trl-sft`` folder (what
    ``flywheel export --format trl --out PATH`` writes). A one-line error for anything else."""
    for folder in (path, path / TRL_FOLDER):
        manifests = sorted(folder.glob("*.manifest.json")) if folder.is_dir() else []
        if manifests:
            try:
                fmt = json.loads(manifests[0].read_text()).get("format")
            except (OSError, ValueError) as exc:
                raise InputError(f"{manifests[0]}: not a readable export manifest ({exc})") from None
            if fmt != "trl":
                raise InputError(f"{folder} is a {fmt!r} export; training takes a trl export "
                                 "(flywheel export --format trl)")
            return folder
    raise InputError(f"{path} holds no export (no manifest): write one with flywheel export --format trl --out {path}")


def export_manifest(folder: Path) -> dict[str, Any]:
    return json.loads(next(folder.glob("*.manifest.json")).read_text())


def load_split(folder: Path, split: str = "train", cache_dir: Path | None = None) -> Any:
    """One split of the export as a ``datasets.Dataset``, loaded through the export's dataset card
    (every column as ``datasets``' Json feature), exactly as a user's trainer loads it."""
    import datasets  # deferred: part of the train extra

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    files = export_manifest(folder).get("files", {})
    if not any(info.get("split") == split and info.get("rows") for info in files.values()):
        raise InputError(f"the export in {folder} has no {split} rows: approve episodes of the {split} split "
                         "and release them first")
    return datasets.load_dataset(str(folder), split=split, cache_dir=str(cache_dir) if cache_dir else None)
