"""What keeps a local Argilla server's secrets from other users of the same machine.

Why: on a shared lab server or cluster login node every local user can list folders that are 0755,
read files that are 0644, connect to any loopback port and read every process's command line
(``/proc/<pid>/cmdline``). Argilla's SQLite database holds the owner's API key in plain text, and its
Redis queue runs whatever job is put in it as the server's user. So: the home dir is 0700 and every
file the server keeps in it 0600 (an existing home, the default one included, is tightened on start); children run with
umask 077 (``babelrag.child_process.PRIVATE_UMASK``); Redis requires a password generated per start, written only to a 0600 config file and
given to Argilla through the environment; the owner's password and API key reach Argilla's CLI through
the environment, never as arguments.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


# What the server keeps in its home (the SQLite files with their journals, our JSON files, Redis's
# config, the migration marker); only these and logs/ are tightened, in case a user pointed the home at a
# folder holding other things of theirs.
OWN_FILES = ("argilla.db", "search.sqlite3", "credentials.json", "users.json", "server.json", "redis.conf")


def _ours(name: str) -> bool:
    return name.startswith(OWN_FILES) or name.startswith(".migrated-")


def private_home(home: Path) -> None:
    """Create ``home`` (and ``logs/``) as 0700, and tighten what an earlier version left readable there."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    (home / "logs").mkdir(exist_ok=True, mode=PRIVATE_DIR)
    os.chmod(home, PRIVATE_DIR)
    os.chmod(home / "logs", PRIVATE_DIR)
    for path in [*home.iterdir(), *(home / "logs").iterdir()]:
        if path.is_file() and not path.is_symlink() and (path.parent.name == "logs" or _ours(path.name)):
            os.chmod(path, PRIVATE_FILE)


def redis_config(home: Path, port: int, password: str) -> Path:
    """A 0600 redis.conf: loopback only, a password, nothing saved to disk. Its path is the only argument."""
    path = Path(home) / "redis.conf"
    text = "\n".join([
        f"port {port}", "bind 127.0.0.1", "protected-mode yes", f"requirepass {password}",
        'save ""', "appendonly no", f'dir "{home}"', "",
    ])
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(path, PRIVATE_FILE)
    return path


def redis_url(port: int, password: str) -> str:
    """The URL Argilla's server and worker get (through the environment only)."""
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"redis://{auth}127.0.0.1:{port}/0"
