"""SIGKILL at random moments while the trace rotates (docs/profiler.md#rotating-files).

Each round starts `profiler_child rotating DIR/trace.json` (the counter "progress" counting up,
continuous dump every 20 ms plus a dump(false) every 500 values, files of 0.05 MiB, so a new
file starts every few milliseconds), kills it at a random moment in the first 0.4 s after it
says it is recording and checks
what it left: every visible file of the series loads as a complete trace (only hidden work
files beside them), the series has no gap in its indexes and each file names its predecessor,
and the counter's values across the files in series order are 0, 1, 2, ... M with none lost
or duplicated at a boundary, M at least the last value the child reported flushed."""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import fault_util
import validate_trace

SERIES = re.compile(r"^trace(?:\.(\d+))?\.json$")


def check_series(work, flushed):
    """Problems with what a killed child left in `work` ([] when it is all good), and the
    number of files."""
    problems, files = [], {}
    for name in os.listdir(work):
        m = SERIES.match(name)
        if m:
            files[int(m.group(1) or 0)] = name
        elif not (name.startswith(".trace") and name.endswith(".nanomx-swap")):
            problems.append(f"unexpected file {name}")
    if not files:
        return problems + ([f"no file, though {flushed} was reported flushed"]
                           if flushed >= 0 else []), 0
    indexes = sorted(files)
    if indexes != list(range(len(indexes))):
        problems.append(f"series indexes {indexes} have a gap")
    values = []
    for index in indexes:
        path = os.path.join(work, files[index])
        try:
            with open(path, "rb") as f:
                data = json.load(f)
        except ValueError as err:
            problems.append(f"{files[index]} does not load: {err}")
            continue
        problems += [f"{files[index]}: {p}"
                     for p in validate_trace.validate(data["traceEvents"], partial=True)[:3]]
        rotation = data["otherData"].get("rotation", {})
        previous = None if index == 0 else files.get(index - 1, f"trace.{index - 1}.json")
        if rotation != {"series": "trace.json", "index": index, "previous": previous}:
            problems.append(f"{files[index]}: rotation {rotation}")
        values += [e["args"]["progress"] for e in data["traceEvents"]
                   if e.get("ph") == "C" and e.get("name") == "progress"]
    if values != list(range(len(values))):
        bad = next(i for i, v in enumerate(values) if v != i) if values else 0
        problems.append(f"progress values lost or duplicated near position {bad}: "
                        f"{values[max(0, bad - 2):bad + 3]}")
    if len(values) <= flushed:
        problems.append(f"values up to {len(values) - 1} in the files, {flushed} reported flushed")
    return problems, len(files)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    work = os.path.abspath("sigkill_rotation_work")
    broken, file_counts = [], []
    for k in range(args.kills):
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        child = subprocess.Popen([fault_util.CHILD, "rotating", os.path.join(work, "trace.json")],
                                 stdout=subprocess.PIPE)
        flushed = [-1]
        recording = threading.Event()

        def read(out=child.stdout, flushed=flushed, recording=recording):
            for line in out:
                if line.startswith(b"recording"):
                    recording.set()
                if line.startswith(b"flushed "):
                    flushed[0] = int(line.split()[1])

        reader = threading.Thread(target=read)
        reader.start()
        # The window counts from when the child records, not from its exec: loading its
        # libraries can take longer than the window itself on a loaded machine.
        recording.wait(timeout=60)
        time.sleep(rng.uniform(0.02, 0.4))
        reported = flushed[0]  # flushed before the kill, whatever the reader sees after it
        child.send_signal(signal.SIGKILL)
        child.wait()
        reader.join()
        child.stdout.close()
        problems, count = check_series(work, reported)
        file_counts.append(count)
        if problems:
            kept = f"{work}_broken_{k}"
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(work, kept)
            broken.append(f"kill {k}: " + "; ".join(problems[:5]) + f" (kept in {kept})")
    shutil.rmtree(work, ignore_errors=True)
    print(f"seed {seed}: {args.kills} kills; files per kill: median "
          f"{fault_util.percentile(file_counts, 50)}, max {max(file_counts)}; "
          f"{len(broken)} broken")
    for b in broken:
        print(b, file=sys.stderr)
    return 0 if not broken and max(file_counts) > 1 else 1


if __name__ == "__main__":
    sys.exit(main())
