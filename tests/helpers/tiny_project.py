"""A tiny annotation project type, added the documented way (docs/annotate.md, "Adding a project type"):
one module with its input record, its dataset spec and one ``@register``-ed class; its guidelines
beside it. The test declares it with ``registry.declare`` as a plug-in would (or its entry point)."""
from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict

from babelrag.annotate.project_type import BuildContext, ProjectType
from babelrag.annotate.projects import HINTS, FieldSpec, ProjectRecord, ProjectSpec, QuestionSpec, Suggestion
from babelrag.annotate.registry import register
from babelrag.rows import parse


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    claim: str
    source: str = ""
    model_says: Optional[Literal["yes", "no"]] = None


SPEC = ProjectSpec(
    "claim_check",
    fields=(FieldSpec("claim", "Claim"), FieldSpec("source", "Source", required=False), HINTS),
    questions=(QuestionSpec("supported", "Does the source support the claim?", {"yes": "Yes", "no": "No"}),),
)


@register
class ClaimCheck(ProjectType):
    name = "claim_check"
    spec = SPEC
    input_model = Claim
    guidelines_file = Path(__file__).with_name("tiny_project_guidelines.md")

    def build(self, rows: list, ctx: BuildContext) -> list[ProjectRecord]:
        return [ProjectRecord(id=c.id, fields={"claim": c.claim, "source": c.source},
                              suggestions=[Suggestion("supported", c.model_says, "tiny-model")] if c.model_says else [])
                for c in parse(Claim, rows, "claim_check input")]
