"""check_trace(path): the file is a trace a viewer reads correctly (tools/validate_trace.py: valid
JSON, every B has its E on the same thread, metadata for every pid and tid, no negative
durations, one start and one finish per flow); returns its events."""
import validate_trace


def check_trace(path):
    events = validate_trace.load_events(path)
    problems = validate_trace.validate(events)
    assert not problems, "%s: %s" % (path, "; ".join(problems[:10]))
    for e in events:
        if e.get("ph") in ("B", "E", "X", "C", "n", "s", "f", "(", ")"):
            assert e["ts"] >= 0, e
    return events


def names_on_process(events, process_name):
    """Names of the non-metadata events whose pid carries `process_name`."""
    pids = {e["pid"] for e in events
            if e.get("ph") == "M" and e.get("name") == "process_name"
            and e["args"]["name"] == process_name}
    return [e["name"] for e in events if e.get("ph") != "M" and e.get("pid") in pids]


def thread_names(events):
    """(pid, tid) -> thread name."""
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"}
