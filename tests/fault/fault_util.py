"""Helpers of the fault tests: start the profiler's test child, read what it left behind."""
import json
import os
import subprocess
import time

import validate_trace

CHILD = os.environ.get("NANOMX_PROFILER_CHILD", "")


def start_heavy(path, threads, **popen_args):
    """Starts `profiler_child heavy PATH THREADS` (profile_all, continuous dump every 0.1 s,
    THREADS threads pushing operators) and returns once it records."""
    child = subprocess.Popen([CHILD, "heavy", path, str(threads)], stdout=subprocess.PIPE,
                             **popen_args)
    line = child.stdout.readline()
    assert line == b"running\n", f"child said {line!r}"
    return child


def load_partial_trace(path):
    """The trace at `path`, checked as a file written while the process ran (see
    tools/validate_trace.py --partial); raises AssertionError with the problems."""
    with open(path, "rb") as f:
        data = json.load(f)
    problems = validate_trace.validate(data["traceEvents"], partial=True)
    assert not problems, f"{path}: " + "; ".join(problems[:5])
    return data


def last_event_monotonic_ns(data):
    """CLOCK_MONOTONIC time of the latest timestamp in the trace."""
    latest_us = max((e["ts"] for e in data["traceEvents"] if e.get("ph") != "M"), default=0)
    return data["otherData"]["time_zero_monotonic_ns"] + int(latest_us * 1000)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def monotonic_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)
