"""``flywheel import``: a file of trajectories recorded elsewhere, read and checked
(flows.stages.importing), then walked through the import's stages (flows.pipeline)."""

from __future__ import annotations

from flows.pipeline import IMPORT, Run, walk
from flows.stages.importing import PreparedImport
from generators.importers.scan import ImportSummary
from warehouse.settings import Settings
from warehouse.store import Store


def import_prepared(store: Store, prepared: PreparedImport, settings: Settings | None = None) -> ImportSummary:
    """Commit the import as its own round (once per file) and curate it."""
    with store.run_lock():
        store.clean_orphans()  # shards of an import killed before its transaction
        run = walk(IMPORT, Run(store, settings, params={"prepared": prepared}))
        prepared.summary.marks = run.out["curate"]  # keyed: 0 once done
    return prepared.summary
