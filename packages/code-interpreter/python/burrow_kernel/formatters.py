"""Display formatters: what a displayed value adds to its MIME bundle."""

import sys

from IPython.core.formatters import BaseFormatter, JSONFormatter
from traitlets import ObjectName, Unicode

from .jsonable import NotJsonable, jsonable


class DataFormatter(BaseFormatter):
    """``e2b/data``: a pandas DataFrame as ``{column: [values…]}``."""

    format_type = Unicode("e2b/data")
    print_method = ObjectName("_repr_e2b_data_")

    def __call__(self, obj):
        pandas = sys.modules.get("pandas")
        if pandas is not None and isinstance(obj, pandas.DataFrame):
            try:
                return jsonable(obj.to_dict(orient="list"))
            except Exception:
                return None
        return super().__call__(obj)


class ChartFormatter(BaseFormatter):
    """``e2b/chart``: the data behind a matplotlib figure (see charts.py)."""

    format_type = Unicode("e2b/chart")
    print_method = ObjectName("_repr_e2b_chart_")

    def __call__(self, obj):
        if "matplotlib" in sys.modules:
            from matplotlib.figure import Figure

            if isinstance(obj, Figure):
                try:
                    from .charts import figure_chart

                    return figure_chart(obj)
                except Exception:
                    return None
        return super().__call__(obj)


class ListDictJSONFormatter(JSONFormatter):
    """``application/json`` for plain lists and dicts too (not only objects with ``_repr_json_``)."""

    def __call__(self, obj):
        if type(obj) in (list, dict):
            try:
                return jsonable(obj, strict=True), {"expanded": True}
            except (NotJsonable, RecursionError, ValueError, TypeError):
                return None
        return super().__call__(obj)


def register_formatters(ipython):
    display = ipython.display_formatter
    display.formatters["e2b/data"] = DataFormatter(parent=display)
    display.formatters["e2b/chart"] = ChartFormatter(parent=display)
    display.formatters["application/json"] = ListDictJSONFormatter(parent=display)
