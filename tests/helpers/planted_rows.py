"""Random index rows for the exact-search tests (tests/test_exact_search.py, tests/test_vectorfile.py): unit
vectors, shuffled ids, en/de/fr, days in ``[0, max_day)`` and ``undated`` of them without a date."""
from __future__ import annotations

import numpy as np

from babelrag.records import UNDATED_DAY


def planted_rows(n: int, dim: int, seed: int, max_day: int, id_digits: int = 4,
                 undated: int = 0) -> tuple[list[str], list[str], list[int], np.ndarray]:
    """(ids, languages, days, vectors) of ``n`` rows; ``undated`` rows get ``UNDATED_DAY`` (corpus.undated keep)."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    ids = [f"art-{i:0{id_digits}d}" for i in rng.permutation(n)]
    langs = rng.choice(["en", "de", "fr"], size=n).tolist()
    days = rng.integers(0, max_day, size=n).tolist()
    if undated:
        for i in rng.choice(n, size=undated, replace=False):
            days[i] = UNDATED_DAY
    return ids, langs, days, v
