"""A tiny export format written the way release/export_formats.py says to add one."""
from __future__ import annotations

from babelrag.release.export_formats import FORMATS, ExportFormat

FORMATS.register_lazy("ids", f"{__name__}:IdList")


@FORMATS.register
class IdList(ExportFormat):
    name = "ids"
    description = "one text file of instance ids per config and split"

    def config_files(self, config, by_split, release):
        return {f"{config}/{split}.txt": "".join(i.id + "\n" for i in sorted(insts, key=lambda i: i.id))
                for split, insts in by_split.items()}
