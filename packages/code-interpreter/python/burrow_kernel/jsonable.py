"""Turn Python values into what JSON can carry (the Jupyter wire refuses NaN and unknown types)."""

import datetime
import math
import sys


class NotJsonable(Exception):
    pass


def _numpy_value(value):
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None, False
    if isinstance(value, numpy.ndarray):
        return value.tolist(), True
    if isinstance(value, numpy.generic):
        return value.item(), True
    return None, False


def jsonable(value, strict=False, depth=0):
    """A JSON-compatible copy of ``value``. ``strict`` raises NotJsonable for values JSON has no form for;
    otherwise they become their ``str``."""
    if depth > 100:
        raise NotJsonable("too deeply nested")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(key, (str, int, float, bool)) or key is None:
                out[str(key) if not isinstance(key, str) else key] = jsonable(item, strict, depth + 1)
            elif strict:
                raise NotJsonable("dict key %r" % (key,))
            else:
                out[str(key)] = jsonable(item, strict, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [jsonable(item, strict, depth + 1) for item in value]
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    converted, ok = _numpy_value(value)
    if ok:
        return jsonable(converted, strict, depth + 1)
    pandas = sys.modules.get("pandas")
    if pandas is not None:
        if value is pandas.NaT:
            return None
        if isinstance(value, pandas.Timestamp):
            return value.isoformat()
        if isinstance(value, pandas.Timedelta):
            return str(value)
    if strict:
        raise NotJsonable(type(value).__name__)
    return str(value)
