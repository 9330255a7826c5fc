"""What the Hub accepts in a dataset card's YAML header, written down once (card of a build and of a
converted folder both use it).

- ``license``: one of the Hub's licence identifiers, the table in ``huggingface/hub-docs``
  ``docs/hub/repositories-licenses.md`` ("License identifier (to use in repo card)"); anything else is
  ``other`` plus a ``license_name``.
- ``size_categories``: the Hub's row-count buckets ``n<1K`` … ``100B<n<1T``, ``n>1T`` (the same table as
  the argilla SDK's ``size_categories_parser``).
- ``language``: ISO 639-1 codes; ``language_details``: canonical BCP-47 tags (``de``, ``zh-Hans``), a
  script subtag only where the language is written in more than one script.
- ``annotations_creators`` / ``language_creators`` / ``source_datasets``: the values the Hub's dataset
  card metadata uses (``expert-generated``, ``machine-generated``, ``found``, ``no-annotation``,
  ``original``, ``extended|<dataset>``).
"""
from __future__ import annotations

import re

from babelrag.errors import BabelragError
from babelrag.languages import script_of

HUB_LICENSES = frozenset("""
apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0 bigcode-openrail-m
afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc cc0-1.0 cc-by-2.0
cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 cc-by-nc-4.0 cc-by-nd-4.0
cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0
cdla-permissive-1.0 cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 agpl-3.0 gfdl gpl
gpl-2.0 gpl-3.0 lgpl lgpl-2.1 lgpl-3.0 isc lppl-1.3c ms-pl mpl-2.0 odc-by odbl openrail++ osl-3.0 postgresql
ofl-1.1 ncsa unlicense zlib pddl lgpl-lr deepfloyd-if-license llama2 gemma unknown other
""".split())

_SIZE_BUCKETS = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                 (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
                 (10_000_000_000, "1B<n<10B"), (100_000_000_000, "10B<n<100B"), (1_000_000_000_000, "100B<n<1T"))
SIZE_CATEGORIES = tuple(label for _, label in _SIZE_BUCKETS) + ("n>1T",)

# languages written in more than one script: the canonical tag names the script (BCP-47 / CLDR likely subtags),
# the one this toolkit writes them in (babelrag/languages.py SCRIPTS: prompts, translations, the language check)
MULTI_SCRIPT = ("zh", "sr", "pa", "uz", "az", "ms")
_ISO639 = re.compile(r"^[a-z]{2,3}$")

CREATORS = ("expert-generated", "crowdsourced", "machine-generated", "found", "no-annotation", "other")


class CardMetadataError(BabelragError):
    """A card header value the Hub would not accept."""


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` bucket for ``n`` rows."""
    for upper, label in _SIZE_BUCKETS:
        if n < upper:
            return label
    return "n>1T"


def bcp47(code: str) -> str:
    """Canonical BCP-47 tag of an ISO 639-1/3 code: ``de`` -> ``de``, ``zh`` -> ``zh-Hans``."""
    code = code.strip().lower()
    if not _ISO639.match(code):
        raise CardMetadataError(f"language {code!r} is not an ISO 639 code (two or three letters, e.g. de, zh)")
    return f"{code}-{script_of(code)}" if code in MULTI_SCRIPT else code


def check_license(license_id: str) -> str:
    """``license_id`` when the Hub knows it; else a CardMetadataError naming the fix."""
    if license_id in HUB_LICENSES:
        return license_id
    near = sorted(x for x in HUB_LICENSES if x.replace("-", "") == license_id.lower().replace("-", "").replace(" ", ""))
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise CardMetadataError(f"licence {license_id!r} is not a Hub licence identifier; {hint}use one of the Hub's "
                            "identifiers (https://huggingface.co/docs/hub/repositories-licenses), e.g. cc-by-4.0, "
                            "cc-by-nc-4.0, apache-2.0, or 'other' with the licence text in a LICENSE file")
