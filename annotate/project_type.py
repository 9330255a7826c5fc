"""What an annotation project type is: a name, the Argilla dataset it makes (``ProjectSpec``), the
input records it reads, and ``build`` from those records to ``ProjectRecord`` values.

A project type is one module with one ``@register``-ed class (``annotate/project_types/<name>.py``,
declared in ``annotate/registry.py``; a plug-in lists it under the entry-point group ``babelrag.annotation_projects`` or calls ``registry.declare``) and its guidelines
(``annotate/guidelines/<name>.md`` unless ``guidelines_file`` says otherwise). Everything else (config
key ``annotate.projects.<name>``, ``push``/``pull``/``status``/``agreement``, input checks, suggestion
modes, Argilla settings) works from these attributes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Optional

from babelrag.annotate.decisions import DecisionRules

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from babelrag.annotate.projects import ProjectRecord, ProjectSpec
    from babelrag.annotate.settings import AnnotateSettings


@dataclass
class BuildContext:
    """What a builder may need beyond the rows: settings (seed, ...), the target language of a
    per-language project, and for projects that show source articles, the articles and highlighter."""

    settings: "AnnotateSettings"
    language: str = ""
    articles: Optional[Mapping[str, Any]] = None
    highlighter: Optional[Any] = None


class ProjectType:
    name: ClassVar[str]
    spec: ClassVar["ProjectSpec"]
    input_model: ClassVar[type["BaseModel"]]  # what a row of `push --input` is
    per_language: ClassVar[bool] = False  # one dataset per target language (`--language`, `languages:`)
    needs_articles: ClassVar[bool] = False  # the CLI hands it the source articles (`--articles` or ingest)
    guidelines_file: ClassVar[Optional[Path]] = None  # default: annotate/guidelines/<name>.md
    # when submitted responses settle a record (merge, decisions, adjudication); None: not merged
    rules: ClassVar[Optional[DecisionRules]] = None
    # False: the project judges models or metrics (answer judgement, forced choice), not the dataset; the
    # release card leaves it out of its annotation section
    dataset_annotation: ClassVar[bool] = True

    def build(self, rows: list, ctx: BuildContext) -> list["ProjectRecord"]:
        """The records to annotate, one per input row (validate rows with ``babelrag.rows.parse``), less the
        rows ``skipped`` counts."""
        raise NotImplementedError

    def skipped(self, rows: list, language: str = "") -> dict[str, int]:
        """Rows that ``build`` leaves out on purpose, counted by reason (push prints them): input that holds
        nothing to annotate, as opposed to bad input, which fails the push. ``language``: the target
        language of a per-language project."""
        return {}
