"""The ``release:`` config section (declared to the config schema through the ``babelrag.sections`` entry point)."""
from __future__ import annotations

import datetime as dt
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from babelrag.config import Section
from babelrag.release.hub_metadata import CardMetadataError, check_license


class TimeSlice(BaseModel):
    """A release of the instances whose supporting articles were all published strictly after ``after`` and
    strictly before ``before`` (``babelrag.freshness``), written as ``<release.name>-<name>-<version>``."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # goes into the folder and dataset name
    after: Optional[dt.date] = None
    before: Optional[dt.date] = None


class ReleaseConfig(Section):
    out_dir: str = "release"
    name: str = "babelrag-benchmark"
    version: str = "0.1.0"
    license: str = "cc-by-4.0"  # a Hub licence identifier (release/hub_metadata.py), checked when the config loads
    dev_fraction: float = Field(0.2, ge=0.0, lt=1.0)
    allow_unverified: bool = False
    hub_repo: Optional[str] = None
    time_slices: list[TimeSlice] = Field(default_factory=list)  # e.g. [{name: 2024H1, after: 2023-12-31, before: 2024-07-01}]

    @field_validator("license")
    @classmethod
    def _hub_licence(cls, value: str) -> str:
        try:
            return check_license(value)
        except CardMetadataError as exc:
            raise ValueError(str(exc)) from None
