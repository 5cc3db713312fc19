"""Distributed KVStore throughput and training step time (docs/kvstore.md).

    PYTHONPATH=python /usr/bin/python3 bench/compare_kvstore.py [--quick] [--json FILE]

- push+pull of 4 M and 16 M float32 values between 2 workers and 1 server (dist_sync, one
  launched job): MB/s = the value's bytes / the time of one push + pull round, beside
  MPI_Allreduce of the same bytes between the same 3 ranks (mpi4py: every rank gets the sum, as
  every worker does from the kvstore), in MB/s of the same definition;
- the time per training step of examples/distributed/train_mlp.py with 1 and 2 workers (one
  server; the global batch of 128 is split across the workers).
Each measurement runs in its own mpirun job, started by this script.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def worker_bench(size, rounds):
    """Inside a launched job (servers never get past the import)."""
    import nanomx as mx
    kv = mx.kv.create("dist_sync")
    value = mx.nd.ones((size,))
    out = mx.nd.zeros((size,))
    kv.init(0, value)
    for _ in range(2):
        kv.push(0, value)
        kv.pull(0, out=out)
        out.wait_to_read()
    kv.barrier()
    start = time.perf_counter()
    for _ in range(rounds):
        kv.push(0, value)
        kv.pull(0, out=out)
        out.wait_to_read()
    elapsed = (time.perf_counter() - start) / rounds
    if kv.rank == 0:
        print("RESULT %s" % json.dumps({"seconds": elapsed}), flush=True)


def allreduce_bench(size, rounds):
    """Inside `mpirun -n 3`: MPI_Allreduce (sum) of `size` float32 values."""
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    send = np.ones(size, dtype=np.float32)
    recv = np.empty_like(send)
    for _ in range(2):
        comm.Allreduce(send, recv, op=MPI.SUM)
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(rounds):
        comm.Allreduce(send, recv, op=MPI.SUM)
    elapsed = (time.perf_counter() - start) / rounds
    if comm.Get_rank() == 0:
        print("RESULT %s" % json.dumps({"seconds": elapsed}), flush=True)


def mpirun_prefix():
    cmd = ["mpirun", "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def run(cmd):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, cwd=ROOT, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), out.stdout[-2000:]))
    return out.stdout


def result(text):
    for line in text.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])["seconds"]
    raise RuntimeError("no result in:\n" + text[-2000:])


def kvstore_seconds(size, rounds):
    return result(run([sys.executable, "-m", "nanomx.tools.launch", "-n", "2", "-s", "1",
                       sys.executable, __file__, "--worker-bench", str(size),
                       "--rounds", str(rounds)]))


def allreduce_seconds(size, rounds):
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    return result(run(mpirun_prefix() + ["-n", "3", sys.executable, __file__,
                                         "--allreduce-bench", str(size), "--rounds",
                                         str(rounds)]))


def step_ms(workers, epochs):
    text = run([sys.executable, "-m", "nanomx.tools.launch", "-n", str(workers), "-s", "1",
                sys.executable, os.path.join(ROOT, "examples", "distributed", "train_mlp.py"),
                "--epochs", str(epochs)])
    steps = [float(m) for m in re.findall(r"([0-9.]+) ms per step", text)]
    if len(steps) != workers:
        raise RuntimeError("expected %d step times in:\n%s" % (workers, text[-2000:]))
    return max(steps)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--json", help="also write the rows to this file (bench/run_benchmarks.py)")
    parser.add_argument("--worker-bench", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--allreduce-bench", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker_bench:
        return worker_bench(args.worker_bench, args.rounds)
    if args.allreduce_bench:
        return allreduce_bench(args.allreduce_bench, args.rounds)

    rounds = 3 if args.quick else 10
    epochs = 1 if args.quick else 3
    rows = []
    area = "Distributed KVStore"
    print("| measure | nanomx | peer | ratio |")
    print("|---|---|---|---|")
    for millions in (4, 16):
        size = millions * 1024 * 1024
        mbytes = size * 4 / 1e6
        kv = mbytes / kvstore_seconds(size, rounds)
        ar_seconds = allreduce_seconds(size, rounds)
        ar = mbytes / ar_seconds if ar_seconds else None
        print("| push+pull %d M float32, 2 workers + 1 server vs MPI_Allreduce (3 ranks) | "
              "%.0f MB/s | %s | %s |" % (millions, kv, "n/a" if ar is None else "%.0f MB/s" % ar,
                                         "n/a" if ar is None else "%.2f×" % (kv / ar)))
        rows.append({"area": area, "what": "push+pull of %d M float32, 2 workers + 1 server"
                     % millions, "unit": "MB/s", "nanomx": kv, "reference": ar,
                     "reference_kind": "peer", "reference_label": "MPI_Allreduce (mpi4py)",
                     "better": "higher", "target": "≥ 0.5×"})
    one = step_ms(1, epochs)
    two = step_ms(2, epochs)
    print("| train_mlp.py step (global batch 128), 2 workers vs 1 worker (1 server) | %.1f ms | "
          "%.1f ms | %.2f× |" % (two, one, two / one))
    rows.append({"area": area, "what": "examples/distributed/train_mlp.py step, 2 workers + "
                 "1 server (1 worker + 1 server as reference)", "unit": "ms", "nanomx": two,
                 "reference": one, "reference_kind": "baseline", "reference_label": "1 worker",
                 "better": "lower", "target": ""})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f)


if __name__ == "__main__":
    main()
