"""SIGKILL at random moments under load (docs/profiler.md#crash-safety).

Each round starts `profiler_child heavy` (profile_all, continuous dump every 0.1 s, N threads
pushing operators through the engine, about 50-100 MB/s of trace here), kills it at a random
moment in its first 0.45 s and checks what it left: either no file yet (killed before its first
flush completed) or a file that loads and validates, plus at most the hidden work file. Reports
the events lost (kill time minus the latest event in the file) and fails if any file is broken
or a kill lost more than 2 s (20 periods: a commit that stopped happening)."""
import argparse
import os
import random
import shutil
import signal
import sys
import time

import fault_util


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    work = os.path.abspath("sigkill_work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    valid, missing, lost_ms, sizes, broken = 0, 0, [], [], []
    for k in range(args.kills):
        path = os.path.join(work, "trace.json")
        child = fault_util.start_heavy(path, args.threads)
        time.sleep(rng.uniform(0.0, 0.45))
        killed_at = fault_util.monotonic_ns()
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        left = sorted(os.listdir(work))
        extra = [f for f in left if f not in ("trace.json", ".trace.json.nanomx-swap")]
        if extra:
            broken.append(f"kill {k}: unexpected files {extra}")
        if "trace.json" not in left:
            missing += 1
        else:
            try:
                data = fault_util.load_partial_trace(path)
                valid += 1
                sizes.append(os.path.getsize(path))
                lost_ms.append((killed_at - fault_util.last_event_monotonic_ns(data)) / 1e6)
            except (ValueError, AssertionError) as err:  # json.JSONDecodeError is a ValueError
                kept = os.path.join(work, f"broken_{k}.json")
                os.replace(path, kept)
                broken.append(f"kill {k}: {str(err)[:300]} (kept as {kept})")
        for f in os.listdir(work):
            if not f.startswith("broken_"):
                os.remove(os.path.join(work, f))
    print(f"seed {seed}: {args.kills} kills, {args.threads} threads: {valid} files valid, "
          f"{missing} killed before the first flush (no file), {len(broken)} broken")
    if lost_ms:
        print(f"events lost per kill (kill time - latest event in the file): median "
              f"{fault_util.percentile(lost_ms, 50):.0f} ms, p90 "
              f"{fault_util.percentile(lost_ms, 90):.0f} ms, max {max(lost_ms):.0f} ms "
              f"(dump period 100 ms)")
        print(f"file sizes: median {fault_util.percentile(sizes, 50) / 1e6:.1f} MB, max "
              f"{max(sizes) / 1e6:.1f} MB")
    for b in broken:
        print(b, file=sys.stderr)
    ok = not broken and valid > 0 and (not lost_ms or max(lost_ms) <= 2000)
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
