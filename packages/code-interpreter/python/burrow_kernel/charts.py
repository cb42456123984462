"""Chart data from matplotlib figures, in the structure E2B's clients expect for ``result.chart``.

One axes gives one chart; a figure with several axes holding data gives a ``superchart`` whose elements are
the charts of its axes. An axes' chart type follows from the artists on it: only lines → line; box patches
and lines → box_and_whisker; otherwise, ignoring grid-like lines, only marker collections → scatter, only
wedges → pie, only rectangles → bar; anything else is ``unknown`` (title only).
"""

import datetime
import math
import re

import matplotlib.category
import matplotlib.dates as mdates
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer
from matplotlib.lines import Line2D
from matplotlib.patches import PathPatch, Rectangle, Wedge
from matplotlib.text import Text

from .jsonable import jsonable

_UNIT = re.compile(r"\(([^()]+)\)|\[([^\[\]]+)\]")


def figure_chart(figure):
    axes = [ax for ax in figure.get_axes() if ax.has_data()]
    if not axes:
        return None
    if len(axes) == 1:
        return jsonable(axes_chart(axes[0]))
    suptitle = getattr(figure, "_suptitle", None)
    title = suptitle.get_text() if suptitle is not None else ""
    return jsonable({"type": "superchart", "title": title or None, "elements": [axes_chart(ax) for ax in axes]})


def axes_chart(ax):
    _ensure_tick_labels(ax)
    kind = _chart_type(ax)
    if kind == "line":
        return _line_chart(ax)
    if kind == "scatter":
        return _scatter_chart(ax)
    if kind == "bar":
        return _bar_chart(ax)
    if kind == "pie":
        return _pie_chart(ax)
    if kind == "box_and_whisker":
        return _box_chart(ax)
    return {"type": "unknown", "title": _text(ax.get_title()), "elements": []}


# --- classification -------------------------------------------------------------------------------------------


def _artists(ax):
    children = getattr(ax, "_children", None)
    if children is None:  # matplotlib < 3.5
        children = [*ax.lines, *ax.patches, *ax.collections, *ax.images]
    return [child for child in children if not isinstance(child, Text)]


def _is_guide_line(artist):
    """A two-point horizontal or vertical line: a grid line, axhline or axvline, not data."""
    if not isinstance(artist, Line2D):
        return False
    xs, ys = artist.get_xdata(orig=False), artist.get_ydata(orig=False)
    if len(xs) != 2 or len(ys) != 2:
        return False
    return xs[0] == xs[1] or ys[0] == ys[1]


def _chart_type(ax):
    artists = _artists(ax)
    if not artists:
        return "unknown"
    if all(isinstance(a, Line2D) for a in artists):
        return "line"
    if all(isinstance(a, (PathPatch, Line2D)) for a in artists) and any(isinstance(a, PathPatch) for a in artists):
        return "box_and_whisker"
    data = [a for a in artists if not _is_guide_line(a)]
    if data and all(isinstance(a, PathCollection) for a in data):
        return "scatter"
    if data and all(isinstance(a, Wedge) for a in data):
        return "pie"
    if data and all(isinstance(a, Rectangle) for a in data):
        return "bar"
    return "unknown"


# --- common parts ---------------------------------------------------------------------------------------------


def _text(value):
    return value if value else None


def _unit(label):
    if not label:
        return None
    match = _UNIT.search(label)
    if not match:
        return None
    return (match.group(1) or match.group(2)).strip() or None


def _ensure_tick_labels(ax):
    """Tick label texts are only filled in when the figure is drawn; draw once if they are still empty."""
    labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
    if labels and not any(labels):
        try:
            ax.figure.canvas.draw()
        except Exception:
            pass


def _converter(axis):
    getter = getattr(axis, "get_converter", None)
    return getter() if getter is not None else getattr(axis, "converter", None)


def _is_date_axis(axis):
    converter = _converter(axis)
    return converter is not None and "date" in type(converter).__name__.lower()


def _scale(ax, which):
    axis = ax.xaxis if which == "x" else ax.yaxis
    if _is_date_axis(axis):
        return "datetime"
    scale = ax.get_xscale() if which == "x" else ax.get_yscale()
    if scale != "linear":
        return scale
    if isinstance(_converter(axis), matplotlib.category.StrCategoryConverter):
        return "categorical"
    ticks = list(axis.get_ticklocs())
    labels = [t.get_text() for t in (ax.get_xticklabels() if which == "x" else ax.get_yticklabels())]
    if ticks and labels and all(float(t).is_integer() for t in ticks):
        if [int(t) for t in ticks] == list(range(len(ticks))) and any(l and not _is_number(l) for l in labels):
            return "categorical"
    return "linear"


def _is_number(text):
    try:
        float(text.replace("\u2212", "-"))
        return True
    except ValueError:
        return False


def _date_value(value):
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    try:
        return mdates.num2date(float(value)).isoformat()
    except Exception:
        return value


def _value(value, is_date):
    if is_date:
        return _date_value(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _axes_2d(ax, chart_type):
    x_label, y_label = _text(ax.get_xlabel()), _text(ax.get_ylabel())
    return {
        "type": chart_type,
        "title": _text(ax.get_title()),
        "x_label": x_label,
        "y_label": y_label,
        "x_unit": _unit(x_label),
        "y_unit": _unit(y_label),
        "elements": [],
    }


def _ticks(ax, chart):
    for which in ("x", "y"):
        axis = ax.xaxis if which == "x" else ax.yaxis
        scale = _scale(ax, which)
        ticks = list(axis.get_ticklocs())
        labels = ax.get_xticklabels() if which == "x" else ax.get_yticklabels()
        chart[which + "_ticks"] = [_date_value(t) if scale == "datetime" else float(t) for t in ticks]
        chart[which + "_tick_labels"] = [label.get_text() for label in labels]
        chart[which + "_scale"] = scale
    return chart


def _series_label(label, prefix, index):
    if not label or label.startswith("_"):
        return "%s %d" % (prefix, index)
    return label


# --- chart types ----------------------------------------------------------------------------------------------


def _line_chart(ax):
    chart = _ticks(ax, _axes_2d(ax, "line"))
    x_date, y_date = _is_date_axis(ax.xaxis), _is_date_axis(ax.yaxis)
    for index, line in enumerate(ax.get_lines()):
        xs, ys = line.get_xdata(), line.get_ydata()
        points = [[_value(x, x_date), _value(y, y_date)] for x, y in zip(xs, ys)]
        chart["elements"].append({"label": _series_label(line.get_label(), "Line", index), "points": points})
    return chart


def _scatter_chart(ax):
    chart = _ticks(ax, _axes_2d(ax, "scatter"))
    x_date, y_date = _is_date_axis(ax.xaxis), _is_date_axis(ax.yaxis)
    collections = [c for c in ax.collections if isinstance(c, PathCollection)]
    for index, collection in enumerate(collections):
        points = [[_value(x, x_date), _value(y, y_date)] for x, y in collection.get_offsets()]
        chart["elements"].append({"label": _series_label(collection.get_label(), "Series", index), "points": points})
    return chart


def _tick_label_at(ax, which, position):
    """The text of the tick nearest to ``position`` on an axis (the bar's or box's category)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    ticks = list(axis.get_ticklocs())
    labels = [t.get_text() for t in (ax.get_xticklabels() if which == "x" else ax.get_yticklabels())]
    if not ticks or len(ticks) != len(labels):
        return str(_value(position, False))
    nearest = min(range(len(ticks)), key=lambda i: abs(ticks[i] - position))
    return labels[nearest] or str(_value(position, False))


def _bar_chart(ax):
    chart = _axes_2d(ax, "bar")
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    if not containers:
        containers = [[p for p in ax.patches if isinstance(p, Rectangle)]]
    bars = [bar for container in containers for bar in container]
    heights = {bar.get_height() for bar in bars}
    horizontal = len(bars) > 1 and len(heights) == 1
    if horizontal:
        chart["x_label"], chart["y_label"] = chart["y_label"], chart["x_label"]
        chart["x_unit"], chart["y_unit"] = chart["y_unit"], chart["x_unit"]
    for index, container in enumerate(containers):
        label = container.get_label() if hasattr(container, "get_label") else None
        group = _series_label(label, "Group", index)
        for bar in container:
            if horizontal:
                position, value = bar.get_y() + bar.get_height() / 2, bar.get_width()
                category = _tick_label_at(ax, "y", position)
            else:
                position, value = bar.get_x() + bar.get_width() / 2, bar.get_height()
                category = _tick_label_at(ax, "x", position)
            chart["elements"].append({"label": category, "group": group, "value": float(value)})
    return chart


def _significant(value, digits=6):
    """Rounded to what the data carries: matplotlib computes wedge angles in float32 (about 7 digits)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - int(math.floor(math.log10(abs(value)))) - 1)


def _pie_chart(ax):
    chart = {"type": "pie", "title": _text(ax.get_title()), "elements": []}
    for index, wedge in enumerate(p for p in ax.patches if isinstance(p, Wedge)):
        chart["elements"].append(
            {
                "label": _series_label(wedge.get_label(), "Slice", index),
                "angle": _significant(abs(wedge.theta2 - wedge.theta1)),
                "radius": float(wedge.r),
            }
        )
    return chart


def _box_chart(ax):
    chart = _axes_2d(ax, "box_and_whisker")
    boxes = []
    for patch in ax.patches:
        if not isinstance(patch, PathPatch):
            continue
        vertices = patch.get_path().vertices
        if len(vertices) == 0:
            continue
        xs, ys = vertices[:, 0], vertices[:, 1]
        boxes.append({"x0": float(xs.min()), "x1": float(xs.max()), "q1": float(ys.min()), "q3": float(ys.max())})
    boxes.sort(key=lambda b: b["x0"])
    lines = [line for line in ax.get_lines()]
    for box in boxes:
        center = (box["x0"] + box["x1"]) / 2
        tolerance = (box["x1"] - box["x0"]) / 2 + 1e-9
        median, low, high, outliers = None, box["q1"], box["q3"], []
        for line in lines:
            xs = [float(x) for x in line.get_xdata(orig=False)]
            ys = [float(y) for y in line.get_ydata(orig=False)]
            if not xs or any(abs(x - center) > tolerance for x in xs):
                continue
            if line.get_linestyle() in ("None", "none", "", " "):
                outliers.extend(ys)
            elif len(xs) == 2 and ys[0] == ys[1] and box["q1"] <= ys[0] <= box["q3"] and abs(xs[1] - xs[0]) >= (box["x1"] - box["x0"]) * 0.99:
                median = ys[0]
            elif len(xs) == 2 and xs[0] == xs[1]:
                if box["q1"] in ys:
                    low = min(ys)
                elif box["q3"] in ys:
                    high = max(ys)
        chart["elements"].append(
            {
                "label": _tick_label_at(ax, "x", center),
                "min": low,
                "first_quartile": box["q1"],
                "median": median,
                "third_quartile": box["q3"],
                "max": high,
                "outliers": outliers,
            }
        )
    return chart
