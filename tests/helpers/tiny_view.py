"""A tiny report view written the way evaluators/report_views.py says to add one."""
from __future__ import annotations

from babelrag.evaluators.report_views import VIEWS, ReportView

VIEWS.register_lazy("model_list", f"{__name__}:ModelList")


@VIEWS.register
class ModelList(ReportView):
    name = "model_list"

    def html(self, page):
        return '<p id="model-list">models: ' + ", ".join(page.models) + "</p>\n"
