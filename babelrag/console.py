"""The rich console every command prints through.

Piped to a log file, rich assumes 80 columns and truncates the run report's columns to "inge…";
a log is read later in an editor, so off a terminal (and without ``COLUMNS``) it gets 160.
"""
from __future__ import annotations

import os
import sys
from typing import Any

LOG_WIDTH = 160


def make_console(stderr: bool = True) -> Any:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else LOG_WIDTH
    return Console(stderr=stderr, width=width)
