"""Console width: a run report piped to a log keeps its stage names and counts readable."""
import io

from babelrag.console import LOG_WIDTH, make_console
from babelrag.pipeline import RunReport, StageReport


def _report() -> RunReport:
    return RunReport(stages=[StageReport(stage="relevance", status="ran", count_in=372, count_out=16, errors=0,
                                         skipped={"over-max-pairs": 308, "unsupported-language-pair": 48},
                                         seconds=332.4, llm_usage={"calls": 16, "cached": 8, "prompt_tokens": 12642,
                                                                   "completion_tokens": 756})])


def test_piped_output_gets_log_width_and_an_untruncated_report(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    console = make_console(stderr=True)  # pytest captures stderr: not a terminal
    assert console.width == LOG_WIDTH
    console.file = io.StringIO()
    console.print(_report().render())
    text = console.file.getvalue()
    for cell in ("relevance", "12,642/756", "16 (8 cached)", "over-max-pairs=308"):
        assert cell in text, text


def test_columns_from_the_environment_win(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert make_console(stderr=True).width == 100
