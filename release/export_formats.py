"""What an export format is, and the registry of them (``babelrag release export --format NAME``).

A format is one registered ``ExportFormat`` subclass: ``name``, ``description``, ``cannot_hold`` (why a
config cannot be written in this format, e.g. a BEIR folder for a ``no-retrieval`` config that has no
documents: skipped with a counted note instead of an empty folder a reader crashes on), ``config_files``
(the files of one config, relative to the export root) and ``shared_files`` (files written once, e.g. an
lm-eval task's utils module). Adding a format is one module::

    @FORMATS.register
    class Csv(ExportFormat):
        name = "csv"
        description = "one CSV per config and split"
        def config_files(self, config, by_split, release):
            return {f"{config}/{split}.csv": ... for split, insts in by_split.items()}

declared in ``_TABLE`` below, or from a plug-in / test with ``FORMATS.register_lazy("csv", "pkg.mod:Csv")``.
A folder made by ``release convert`` is exported in its own format by ``release/external.py`` first.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Optional

from babelrag.lazy_registry import LazyRegistry
from babelrag.records import Instance
from babelrag.release.protocol import OURS, Protocol

_TABLE = {
    "beir": "babelrag.release.export:BeirExport",
    "xrag": "babelrag.release.export:XragExport",
    # owned by evaluators (it ships their answer prompt): declared here by name only, so release imports
    # nothing from evaluators (the folders depend one way: evaluators -> release)
    "lm-eval": "babelrag.evaluators.lm_eval_task:LmEvalExport",
}
FORMATS: LazyRegistry["ExportFormat"] = LazyRegistry("export format", _TABLE,
                                                     " (garage: folders converted from GaRAGe only)")


@dataclass(frozen=True)
class ReleaseRef:
    """The release being exported, for formats that point back at it (an lm-eval task loads it by path)."""

    folder: Path
    name: str = ""
    protocol: Protocol = field(default=OURS)
    seed: int = 0  # the seed of the document shuffle (``evaluate run`` uses project.seed)


class ExportFormat:
    name: ClassVar[str]
    description: ClassVar[str] = ""

    def cannot_hold(self, instances: Sequence[Instance]) -> Optional[str]:
        """None when every instance of a config can be written; else the reason the config is skipped."""
        return None

    def config_files(self, config: str, by_split: dict[str, list[Instance]], release: ReleaseRef) -> dict[str, str]:
        """Relative path (from the export root) -> text, for one config."""
        raise NotImplementedError

    def shared_files(self, configs: Sequence[str], release: ReleaseRef) -> dict[str, str]:
        """Files written once for the exported ``configs``. Default: none."""
        return {}


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write ``files`` (relative path -> text, as the formats make them) under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
