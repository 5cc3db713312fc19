#!/usr/bin/env python3
"""GPU benchmarks (docs/cuda.md): 4096² dot through the executor on gpu(0) vs a direct
cublasSgemm, and what profiling adds per GPU operation.

    bench/compare_gpu.py [--quick] [--json FILE] [--build build/release]

Runs the build's bench/gpu/gpu_dot_bench (built with the CUDA backend). Without a GPU, or in a
build without CUDA, it measures nothing, says why, and writes no rows.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1024² and fewer iterations")
    parser.add_argument("--json", help="also write the rows to this file (bench/run_benchmarks.py)")
    parser.add_argument("--build", default=os.environ.get("NANOMX_BUILD",
                                                          os.path.join(ROOT, "build", "release")))
    args = parser.parse_args()
    binary = os.path.join(args.build, "bench", "gpu", "gpu_dot_bench")
    rows = []
    if not os.path.exists(binary):
        print("compare_gpu: %s is missing (a build without CUDA): nothing measured" % binary)
    else:
        size, iters = ("1024", "5") if args.quick else ("4096", "20")
        out = subprocess.run([binary, size, iters], check=True, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            if line.startswith("{"):
                rows.append(json.loads(line))
            else:
                print(line)
    print("| measure | nanomx | reference | ratio |")
    print("|---|---|---|---|")
    for r in rows:
        ratio = r["nanomx"] / r["reference"] if r["reference"] else float("nan")
        print("| %s | %.3g %s | %.3g %s (%s) | %.2f× |" % (r["what"], r["nanomx"], r["unit"],
                                                          r["reference"], r["unit"],
                                                          r["reference_label"], ratio))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
