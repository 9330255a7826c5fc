"""Where the test fixtures are: the calibration helpers in ``babelrag.testing`` take these paths as arguments
(an installed wheel has no ``tests/`` beside the package to walk up to)."""
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NTREX_EVENTS = FIXTURES / "ntrex_events"  # X-English same-event sets (pair_calibration)
NTREX_SAMELANG = FIXTURES / "ntrex_samelang"  # nine languages' same-event reports (samelang_calibration)
NTREX_LANGUAGES = FIXTURES / "ntrex_languages"  # twelve English leads and their translations (languages, encoder_coverage)
