"""Shared setup of the Python tests: the package from this checkout, a scratch working folder
per test (traces are written to the current folder), and the profiler fixture that finishes and
validates every trace a test writes."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import nanomx as mx  # noqa: E402
from trace_check import check_trace  # noqa: E402


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _finish_profiler():
    mx.profiler.set_state("stop")
    try:
        mx.profiler.dump(True)
    except mx.MXNetError as e:  # the test finished its file itself
        assert "hasn't been run" in str(e), str(e)


@pytest.fixture
def enable_profiler(in_tmp):
    """MXNet's test helper: enable_profiler(filename, run=True, continuous_dump=False,
    aggregate_stats=False) with symbolic, imperative, memory and API profiling on. At the end
    of the test the profiler is stopped, the file finished and every file checked with the
    trace validator."""
    files = []

    def enable(filename, run=True, continuous_dump=False, aggregate_stats=False):
        mx.profiler.set_config(profile_symbolic=True, profile_imperative=True,
                               profile_memory=True, profile_api=True, filename=filename,
                               continuous_dump=continuous_dump,
                               aggregate_stats=aggregate_stats)
        files.append(filename)
        if run:
            mx.profiler.set_state("run")

    yield enable
    _finish_profiler()
    for f in files:
        check_trace(f)


@pytest.fixture
def profile_to(in_tmp):
    """profile_to(filename, **config): set_config(filename=..., **config) and run; the trace is
    finished, validated and returned (its events) by calling the returned finish()."""

    class Session(object):
        def __init__(self):
            self.filename = None

        def start(self, filename, **config):
            self.filename = filename
            mx.profiler.set_config(filename=filename, **config)
            mx.profiler.set_state("run")

        def finish(self):
            _finish_profiler()
            return check_trace(self.filename)

    session = Session()
    yield session
    if session.filename is not None:
        _finish_profiler()
