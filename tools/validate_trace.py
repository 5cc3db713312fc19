#!/usr/bin/env python3
"""Checks that a Chrome-trace file is one a viewer can open and read correctly.

    validate_trace.py [--partial] FILE [FILE ...]
                                          exit 0 when every file passes; problems on stderr

Rules (docs/trace-format.md): the file is valid JSON (object form with "traceEvents", or a bare
array); every `B` has its `E` on the same thread, properly nested, never ending before it
began; every async `b` has its `e` (same cat, id and name); every `X` has a non-negative `dur`;
every pid has `process_name` metadata and every (pid, tid) that records has `thread_name`
metadata; each flow (cat, id) has exactly one `s` and one `f`; timestamps are non-negative
numbers. Dependency flows (cat "dependency": the engine's "this completion made that operation
ready" arrows) are flows like the push flows, matched by (cat, id); their finish binds to the
enclosing slice (`"bp":"e"`) and never comes before its start.

--partial: the file was written while the process ran (a continuous-dump file, or one left by a
killed process): an operation pushed but not yet run has its flow start without its finish,
which is allowed then. A finish without its start never is.

Importable: validate(events, partial=False) returns a list of problems (empty when the trace is
good).
"""
import json
import sys
from collections import defaultdict


def load_events(path):
    with open(path, "rb") as f:
        data = json.load(f)
    if isinstance(data, dict):
        events = data.get("traceEvents")
        if not isinstance(events, list):
            raise ValueError(f"{path}: top-level object has no 'traceEvents' array")
        return events
    if isinstance(data, list):
        return data
    raise ValueError(f"{path}: expected a JSON object or array at top level")


def validate(events, partial=False):
    problems = []
    process_names = set()
    thread_names = set()
    used_pids = set()
    used_threads = set()
    stacks = defaultdict(list)  # (pid, tid) -> [(name, ts)]
    async_open = defaultdict(list)  # (cat, id, name) -> [ts]
    flows = defaultdict(lambda: {"s": 0, "f": 0})

    for index, e in enumerate(events):
        where = f"event {index}"
        if not isinstance(e, dict):
            problems.append(f"{where}: not an object")
            continue
        ph = e.get("ph")
        pid, tid = e.get("pid"), e.get("tid")
        if ph == "M":
            if e.get("name") == "process_name":
                process_names.add(pid)
            elif e.get("name") == "thread_name":
                thread_names.add((pid, tid))
            continue
        ts = e.get("ts")
        # Negative only for a record older than its file's zero (docs/trace-format.md).
        if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts != ts:
            problems.append(f"{where}: bad ts {ts!r}")
            continue
        used_pids.add(pid)
        used_threads.add((pid, tid))
        key = (pid, tid)
        if ph == "B":
            stacks[key].append((e.get("name"), ts))
        elif ph == "E":
            if not stacks[key]:
                problems.append(f"{where}: 'E' on pid {pid} tid {tid} without an open 'B'")
                continue
            name, begin = stacks[key].pop()
            if "name" in e and e["name"] != name:
                problems.append(f"{where}: 'E' {e['name']!r} closes 'B' {name!r} (bad nesting)")
            if ts < begin:
                problems.append(f"{where}: {name!r} ends at {ts} before it begins at {begin}")
        elif ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0:
                problems.append(f"{where}: 'X' {e.get('name')!r} has bad dur {dur!r}")
        elif ph == "b":
            async_open[(e.get("cat"), e.get("id"), e.get("name"))].append(ts)
        elif ph == "e":
            k = (e.get("cat"), e.get("id"), e.get("name"))
            if not async_open[k]:
                problems.append(f"{where}: 'e' {e.get('name')!r} without its 'b'")
                continue
            begin = async_open[k].pop()
            if ts < begin:
                problems.append(f"{where}: async {e.get('name')!r} ends before it begins")
        elif ph in ("s", "f"):
            flow = flows[(e.get("cat"), e.get("id"))]
            flow[ph] += 1
            if e.get("cat") == "dependency":
                if ph == "f" and e.get("bp") != "e":
                    problems.append(f"{where}: dependency finish without \"bp\":\"e\"")
                flow["ts_" + ph] = ts
        elif ph == "C":
            if not isinstance(e.get("args"), dict) or not e["args"]:
                problems.append(f"{where}: counter {e.get('name')!r} has no args")

    for key, stack in stacks.items():
        for name, begin in stack:
            problems.append(f"'B' {name!r} at {begin} on pid {key[0]} tid {key[1]} never ends")
    for key, opened in async_open.items():
        for begin in opened:
            problems.append(f"async 'b' {key[2]!r} (cat {key[0]!r}, id {key[1]}) never ends")
    for key, count in flows.items():
        if count.get("ts_f", float("inf")) < count.get("ts_s", float("-inf")):
            problems.append(f"flow {key}: finish at {count['ts_f']} before its start at "
                            f"{count['ts_s']}")
        if partial and count["s"] == 1 and count["f"] == 0:
            continue
        if count["s"] != 1 or count["f"] != 1:
            problems.append(f"flow {key}: {count['s']} start(s) and {count['f']} finish(es)")
    for pid in sorted(used_pids - process_names, key=str):
        problems.append(f"pid {pid} has no process_name metadata")
    for pid, tid in sorted(used_threads - thread_names, key=str):
        problems.append(f"pid {pid} tid {tid} has no thread_name metadata")
    return problems


def main(argv):
    partial = "--partial" in argv[1:]
    paths = [a for a in argv[1:] if a != "--partial"]
    if not paths:
        print("\n".join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
        return 2
    failed = False
    for path in paths:
        try:
            events = load_events(path)
        except (OSError, ValueError) as err:
            print(f"{path}: {err}", file=sys.stderr)
            failed = True
            continue
        problems = validate(events, partial)
        for p in problems[:50]:
            print(f"{path}: {p}", file=sys.stderr)
        if len(problems) > 50:
            print(f"{path}: … and {len(problems) - 50} more problems", file=sys.stderr)
        if problems:
            failed = True
        else:
            print(f"{path}: valid ({len(events)} events)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
