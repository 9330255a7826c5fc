"""Files the CLI writes for users (example config)."""
from __future__ import annotations

from importlib import resources


def example_config_text() -> str:
    return resources.files(__package__).joinpath("config.example.yaml").read_text(encoding="utf-8")
