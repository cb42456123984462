"""IPython extension loaded into every Burrow python context.

It adds the display formats E2B's clients understand (``e2b/data`` for pandas DataFrames, ``e2b/chart`` for
matplotlib figures, ``application/json`` for lists and dicts) and the environment helpers the execution server
calls around runs. Heavy libraries are only looked at when user code has already imported them.
"""

from .env import _env_pop, _env_push, _env_set
from .formatters import register_formatters

__all__ = ["load_ipython_extension", "_env_set", "_env_push", "_env_pop"]


def load_ipython_extension(ipython):
    register_formatters(ipython)
