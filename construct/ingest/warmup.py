"""Imported once by the extraction pool's server process (``extract_item.preload_modules``).

It runs one date extraction on a page whose only date is a free-text expression, which makes dateparser
load its locale data (~5 s): forked workers then start with it loaded instead of each paying it on their
first such page. Importing it anywhere else only costs those seconds once.
"""
from .extract import publication_date

_PAGE = "<html><body><h1>Programme</h1><p>Diffusions : 15 avril, 2 et 6 Mai 19</p></body></html>"

publication_date(_PAGE, "https://example.org/warm-up")
