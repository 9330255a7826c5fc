"""Release's language rule uses the shared checker (construct checks translations with the same one)."""
from babelrag.langcheck import LanguageChecker

__all__ = ["LanguageChecker"]
