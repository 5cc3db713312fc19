"""The 60 s memory stress (docs/profiler.md#memory-bound): bench/profiler/profiler_memory_stress
with 4 threads replaced every 20000 iterations, profile_all, no dump, max_buffer_mb=16. The
resident set must stay within the bound plus the documented constant (16 MiB over the RSS
before the profiler was configured) and stop growing once the buffers are full (at most 4 MiB
between t=10 s and the end: the thread names of the threads created meanwhile)."""
import argparse
import re
import subprocess
import sys

BOUND_MIB = 16
CONSTANT_MIB = 16
LATE_GROWTH_MIB = 4


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    out = subprocess.run([args.tool, str(args.seconds), "4", str(BOUND_MIB)], check=True,
                         capture_output=True, text=True).stdout
    print(out, end="")
    before = float(re.search(r"RSS before config ([\d.]+) MiB", out).group(1))
    samples = [(float(t), float(rss), float(peak)) for t, rss, peak in
               re.findall(r"t=\s*([\d.]+) s\s+RSS ([\d.]+) MiB\s+peak ([\d.]+) MiB", out)]
    assert samples, "the tool printed no samples"
    peak = max(p for _, _, p in samples)
    at_10 = next((rss for t, rss, _ in samples if t >= 10), samples[0][1])
    end = samples[-1][1]
    problems = []
    if peak - before > BOUND_MIB + CONSTANT_MIB:
        problems.append(f"peak RSS grew {peak - before:.1f} MiB over the start, more than the "
                        f"bound ({BOUND_MIB}) plus the constant ({CONSTANT_MIB})")
    if end - at_10 > LATE_GROWTH_MIB:
        problems.append(f"RSS grew {end - at_10:.1f} MiB after t=10 s (allowed "
                        f"{LATE_GROWTH_MIB})")
    print(f"summary: before {before:.1f} MiB, peak {peak:.1f} MiB (+{peak - before:.1f}), "
          f"at 10 s {at_10:.1f} MiB, end {end:.1f} MiB (+{end - at_10:.1f} after 10 s)")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
