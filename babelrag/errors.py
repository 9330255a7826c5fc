"""User-facing errors: the CLI prints them as one line and exits non-zero, never a traceback."""
from __future__ import annotations


class BabelragError(Exception):
    """A problem the user can fix: say what (file/record/key) and how."""

    exit_code = 2


class ConfigError(BabelragError):
    """The YAML config is missing, unreadable or invalid."""


class InputError(BabelragError):
    """An input file or corpus is missing, empty or of the wrong format."""


class StageError(BabelragError):
    """A stage cannot run (missing upstream output, missing optional dependency, ...)."""


class IncompleteRun(BabelragError):
    """The run finished what it could, but items failed (an endpoint that did not answer): they are
    stored as failed, and a plain re-run retries exactly them. Not a config error, hence its own code."""

    exit_code = 3
