"""Open the annotation guidelines on an annotator's first visit to a dataset, collapse them on later
visits (runs INSIDE the server venv).

Why: Argilla 2.8's annotation page shows the guidelines in a collapsible panel under the record, and
the panel starts collapsed unless the browser has a saved layout for that dataset (localStorage key
``argilla`` -> ``layout`` -> ``<dataset id>-r-h-rz`` = ``{isExpanded, position}``; the web UI writes
it whenever the annotator opens, closes or resizes the panel). A new annotator would never see the
guidelines unless they look for them; but left open, they take the space of the record (about 150 px
of it at 1366x768). This module adds a small script to the HTML pages of the server's per-process
copy of the web UI (``configure_app_statics`` copies the bundled files to a temporary folder at
import). On the annotation page of a dataset, before the page's components read the layout:

- first visit in this browser (no ``babelrag-guidelines-seen`` entry for the dataset): panel open;
- a later visit (a new tab or browser session; ``sessionStorage`` tells): panel collapsed, keeping
  the annotator's panel size;
- within one visit nothing is touched: what the annotator opens or closes stays.

The installed package is never modified. Imports nothing from babelrag: the server venv does not have
the project installed.
"""
from __future__ import annotations

import glob
import os

MARKER = "babelrag-guidelines-first-visit"
SEEN_KEY = "babelrag-guidelines-seen"  # localStorage: dataset id -> first visit time (ms)
VISIT_KEY = "babelrag-guidelines-visit"  # sessionStorage: dataset ids handled in this tab's visit
LAYOUT_SUFFIX = "-r-h-rz"  # id of the record column's resizable panel (the one holding the guidelines)
OPEN_HEIGHT = "55%"  # share of the column left to the record while the guidelines are open

SCRIPT = f"""<script id="{MARKER}">(function () {{
  function read(storage, key) {{
    try {{ return JSON.parse(storage.getItem(key) || "{{}}") || {{}}; }} catch (e) {{ return {{}}; }}
  }}
  function seed() {{
    var m = window.location.pathname.match(/\\/dataset\\/([^\\/]+)\\/annotation-mode/);
    if (!m) return;
    var visit = read(window.sessionStorage, "{VISIT_KEY}");
    if (visit[m[1]]) return;
    visit[m[1]] = 1;
    window.sessionStorage.setItem("{VISIT_KEY}", JSON.stringify(visit));
    var seen = read(window.localStorage, "{SEEN_KEY}");
    var store = read(window.localStorage, "argilla");
    var layout = store.layout || {{}};
    var key = m[1] + "{LAYOUT_SUFFIX}";
    if (!seen[m[1]]) {{
      seen[m[1]] = Date.now();
      window.localStorage.setItem("{SEEN_KEY}", JSON.stringify(seen));
      layout[key] = {{ isExpanded: true, position: (layout[key] && layout[key].position) || "{OPEN_HEIGHT}" }};
    }} else {{
      layout[key] = {{ isExpanded: false, position: (layout[key] && layout[key].position) || "{OPEN_HEIGHT}" }};
    }}
    store.layout = layout;
    window.localStorage.setItem("argilla", JSON.stringify(store));
  }}
  seed();
  ["pushState", "replaceState"].forEach(function (name) {{
    var original = window.history[name];
    window.history[name] = function () {{ var r = original.apply(this, arguments); seed(); return r; }};
  }});
  window.addEventListener("popstate", seed);
}})();</script>"""


def inject_into(folder: str) -> int:
    """Add the script at the top of ``<head>`` of every HTML page under ``folder``; returns pages changed."""
    changed = 0
    for path in glob.glob(os.path.join(folder, "**", "*.html"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            page = fh.read()
        if MARKER in page or "<head>" not in page:
            continue
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(page.replace("<head>", "<head>" + SCRIPT, 1))
        changed += 1
    return changed


def install(app) -> int:
    """Inject into the folder the app serves its web UI from (0 if it serves none)."""
    for route in getattr(app, "routes", []):
        directory = getattr(getattr(route, "app", None), "directory", None)
        if getattr(route, "name", None) == "static" and directory:
            return inject_into(str(directory))
    return 0
