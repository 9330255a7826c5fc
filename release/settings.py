"""The ``release:`` config section (declared to the config schema through the ``babelrag.sections`` entry point)."""
from __future__ import annotations

from typing import Optional

from pydantic import Field, field_validator

from babelrag.config import Section


class ReleaseConfig(Section):
    out_dir: str = "release"
    name: str = "babelrag-benchmark"
    version: str = "0.1.0"
    license: str = "cc-by-4.0"  # a Hub licence identifier (release/hub_metadata.py), checked when the config loads
    dev_fraction: float = Field(0.2, ge=0.0, lt=1.0)
    allow_unverified: bool = False
    hub_repo: Optional[str] = None

    @field_validator("license")
    @classmethod
    def _hub_licence(cls, value: str) -> str:
        from babelrag.release.hub_metadata import CardMetadataError, check_license

        try:
            return check_license(value)
        except CardMetadataError as exc:
            raise ValueError(str(exc)) from None
