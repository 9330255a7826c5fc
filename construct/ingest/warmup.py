"""Imported once by the extraction pool's server process (``extract_item.preload_modules``).

It extracts one small page whose only date is a free-text expression: trafilatura, lxml and htmldate set
up their lazily built tables, and dateparser loads its locale data (~5 s). Forked workers then start with
all of it loaded instead of each paying it on their first pages. Importing it anywhere else only costs
those seconds once.
"""
from .extract import article_from_html

_PAGE = ("<html><head><title>Programme de la semaine</title></head><body><article><h1>Programme de la "
         "semaine</h1><p>Diffusions : 15 avril, 2 et 6 Mai 19</p><p>"
         + "La radio publie chaque semaine un programme de reportages et de documentaires. " * 8
         + "</p></article></body></html>")

article_from_html(_PAGE, "https://example.org/warm-up")
