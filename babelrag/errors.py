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


class IncompleteRunError(BabelragError):
    """The run finished but some calls failed (their items are counted, not hidden): what was written is
    true but incomplete. A plain re-run retries exactly the failed calls; cached successes are not re-sent."""

    exit_code = 3
