"""How a release's documents are shown to a model: their order and the label each one is cited by.

Our own releases shuffle each instance's documents with a seed (so supporting articles are not always
first) and number them ``[1]..[n]``. An external benchmark converted with ``release convert`` keeps its
published protocol instead, written into ``release.json`` under ``protocol`` and read back by
``evaluate run``:

- GaRAGe (ACL Findings 2025, arXiv:2506.07671; ``amazon-science/GaRAGe`` README, "Data Format"): passages in
  the published ``grounding`` order, each prefixed by its citation marker ``[cite_N]``; the human answers
  cite ``[cite_N]``, so a model is asked to cite the same way and ``[cite_N]`` is read as passage N.
- XRAG (Liu et al., 2025; the ``AmazonScience/XRAG`` dataset card): the ``articles`` in the order
  released, numbered ``[1]..[n]``.
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, Optional

from babelrag.errors import InputError

DocumentOrder = Literal["shuffled", "published"]


@dataclass(frozen=True)
class Protocol:
    """``document_order``: "shuffled" (seeded per instance) or "published" (as the release stores them);
    ``citation_label``: how document n is labelled and cited, ``[{label}]`` (``{n}`` is its position)."""

    document_order: DocumentOrder = "shuffled"
    citation_label: str = "{n}"
    reference: str = ""  # where the protocol is published

    def __post_init__(self) -> None:
        if self.document_order not in ("shuffled", "published"):
            raise InputError(f"protocol document_order {self.document_order!r} is not shuffled or published")
        if "{n}" not in self.citation_label:
            raise InputError(f"protocol citation_label {self.citation_label!r} must contain {{n}}")

    @property
    def numbered(self) -> bool:
        """Documents are cited by bare numbers ``[1]`` (else by keys such as ``[cite_1]``)."""
        return self.citation_label == "{n}"

    def label(self, n: int) -> str:
        return self.citation_label.format(n=n)

    def order(self, documents: Sequence[Any], instance_id: str, seed: int) -> list[Any]:
        """The documents in the order shown: as stored, or shuffled by ``seed`` and the instance id only."""
        docs = list(documents)
        if self.document_order == "shuffled":
            random.Random(f"{seed}:{instance_id}").shuffle(docs)
        return docs

    def recorded(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_info(cls, info: Optional[Mapping[str, Any]]) -> "Protocol":
        """The protocol a ``release.json`` records (ours: the default seeded shuffle)."""
        data = (info or {}).get("protocol")
        if not data:
            return cls()
        try:
            return cls(**data)
        except TypeError as exc:
            raise InputError(f"release.json protocol {data!r} is not a protocol ({exc}); expected document_order, "
                             "citation_label, reference") from None


OURS = Protocol()
# per external format: the protocol ``release convert`` writes into release.json
PUBLISHED: dict[str, Protocol] = {
    "garage": Protocol("published", "cite_{n}", "GaRAGe, ACL Findings 2025 (arXiv:2506.07671); "
                                                "github.com/amazon-science/GaRAGe README"),
    "xrag": Protocol("published", "{n}", "XRAG, Liu et al. 2025 (arXiv:2505.10089); "
                                         "huggingface.co/datasets/AmazonScience/XRAG"),
}
