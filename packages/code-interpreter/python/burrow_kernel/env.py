"""Environment changes requested by the execution server (sandbox variables, per-run variables)."""

import os

_saved = []


def _env_set(values):
    os.environ.update(values)


def _env_push(values):
    _saved.append({key: os.environ.get(key) for key in values})
    os.environ.update(values)


def _env_pop():
    if not _saved:
        return
    for key, previous in _saved.pop().items():
        if previous is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = previous
