"""The per-item ways mining took its input before it took arrays, kept as the tests' oracles (the stage only
uses the array paths: ``_WindowPairs.add_rows``, ``LanguageSlice.extend``)."""
from __future__ import annotations

from typing import Any

from babelrag.construct.neighbour_density import density


def add_list(stream: Any, q: str, found: list[tuple], day: int | None = None) -> None:
    """``q``'s neighbour list into a ``samelang._WindowPairs``, best first: (id, cosine) or (id, cosine, day) (the
    search's days: no lookup per hit); ``day``: q's own (else looked up). What ``add_rows`` does for a batch."""
    k = stream.k
    first = [h[1] for h in found[:k]]
    total = sum(first)
    if stream.fill is None:
        stream._cosines.extend(first)
    if stream.fill is not None or len(found) >= k:
        stream._known(q, density(total, len(found), k, stream.fill if stream.fill is not None else 0.0))
    else:
        stream._short[q] = (total, len(found))
    here = (stream.docs[q].day if day is None else day, q)
    docs = stream.docs
    stream._walk(q, [h[0] for h in found], [h[1] for h in found],
                 [(h[2] if len(h) > 2 else docs[h[0]].day, h[0]) > here for h in found])


def add_article(sl: Any, art: Any) -> None:
    """One article (``id``, ``day``, ``title_entities``) into a ``pairs.LanguageSlice``: what ``extend`` does
    for a block of columns."""
    sl.ids.append(art.id)
    sl.days.append(art.day)
    sl.indices.extend(sl.vocab.setdefault(e, len(sl.vocab)) for e in art.title_entities)
    sl.indptr.append(len(sl.indices))
