"""Entry point run with the argilla-server venv's python: register our search engine, then run Argilla's CLI.

Usage (as the supervisor calls it): ``<server-venv>/bin/python launcher.py start --host 127.0.0.1 --port P``,
``... worker --num-workers 1``, ``... database migrate``, ``... create-owner`` (reads the owner's
username, password and API key from ``BABELRAG_OWNER_*`` environment variables and hands them to
``database users create`` in-process, so they never appear in ``/proc/<pid>/cmdline``).
Registration must happen in the same process before the CLI runs: ``start`` serves in-process (uvicorn)
and ``worker`` forks rq workers, which inherit the registry. For ``start``, the web UI pages also get
the script that opens the guidelines on a first visit (``ui_first_visit``). Every command gets the cheaper
hot paths of ``hot_paths`` (the server and the rq workers write records). Imports nothing from babelrag.
"""
from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    # Argilla reads its settings at import time: select the engine before anything imports them.
    os.environ.setdefault("ARGILLA_SEARCH_ENGINE", "babelrag-sqlite")
    import sqlite_engine  # noqa: F401  (registers the engine class)
    import hot_paths

    if os.environ.get("BABELRAG_ARGILLA_HOT_PATHS") != "off":  # "off": Argilla's own code paths (bench baseline only)
        hot_paths.install()

    if argv[:1] == ["start"]:
        # the web app (and its temporary copy of the web UI) is built at import; uvicorn reuses this module
        import ui_first_visit
        from argilla_server._app import app as web_app

        ui_first_visit.install(web_app)

    if argv[:1] == ["create-owner"]:
        argv = owner_args()

    from argilla_server.cli.__main__ import app

    app(args=argv, prog_name="argilla_server")


def owner_args() -> list[str]:
    """``database users create`` arguments for the owner, from (and removed from) the environment."""
    username, password, api_key = (os.environ.pop(f"BABELRAG_OWNER_{k}") for k in ("USERNAME", "PASSWORD", "API_KEY"))
    return ["database", "users", "create", "--first-name", "Owner", "--username", username,
            "--password", password, "--role", "owner", "--api-key", api_key]


if __name__ == "__main__":
    main(sys.argv[1:])
