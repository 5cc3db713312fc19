"""The MXNet profiler guide's matmul example, run on nanomx.

A 4096 x 4096 `dot` bound through the symbolic executor (simple_bind) and run --iter_num times,
each forward followed by wait_to_read; iterations [--begin_profiling_iter,
--end_profiling_iter) are profiled, so the trace's operator rows hold the executor's `dot`
events only (the random fills and copies into the executor's arguments run before); as in MXNet,
`set_config(profile_symbolic=True, ...)` leaves the other kinds at their default (on), so the
C API calls of those iterations are there too. The trace goes to --profile_filename when the
script ends.

Beyond MXNet's script: --ctx cpu|gpu (gpu when a GPU exists, else cpu with a note) and --size
(the matrices' side, 4096 as in the guide). The timing uses time.process_time() (the process's
CPU time over all threads, MXNet 1.x's time.clock()) and divides by --iter_num, as the guide
does.

Run from a checkout: PYTHONPATH=python /usr/bin/python3 examples/profiler/profiler_matmul.py
"""
import argparse
import time

import nanomx as mx


def parse_args():
    parser = argparse.ArgumentParser(description="Set network parameters for benchmark test.")
    parser.add_argument("--profile_filename", type=str, default="profile_matmul_20iter.json")
    parser.add_argument("--iter_num", type=int, default=100)
    parser.add_argument("--begin_profiling_iter", type=int, default=50)
    parser.add_argument("--end_profiling_iter", type=int, default=70)
    parser.add_argument("--ctx", type=str, default="gpu", choices=["cpu", "gpu"],
                        help="device of the executor (gpu falls back to cpu without a GPU)")
    parser.add_argument("--size", type=int, default=4096, help="side of the square matrices")
    args = parser.parse_args()
    if not 0 <= args.begin_profiling_iter < args.end_profiling_iter < args.iter_num:
        parser.error("need 0 <= begin_profiling_iter < end_profiling_iter < iter_num")
    return args


def device(name):
    if name == "gpu":
        if mx.context.num_gpus() > 0:
            return mx.gpu(0)
        print("no GPU found: running on cpu(0)")
    return mx.cpu(0)


if __name__ == "__main__":
    args = parse_args()
    mx.profiler.set_config(profile_symbolic=True, filename=args.profile_filename)
    print("profile file save to {0}".format(args.profile_filename))

    A = mx.sym.Variable("A")
    B = mx.sym.Variable("B")
    C = mx.symbol.dot(A, B)

    n = args.size
    executor = C.simple_bind(device(args.ctx), "write", A=(n, n), B=(n, n))

    a = mx.random.uniform(-1.0, 1.0, shape=(n, n))
    b = mx.random.uniform(-1.0, 1.0, shape=(n, n))

    a.copyto(executor.arg_dict["A"])
    b.copyto(executor.arg_dict["B"])

    print("execution begin")
    for i in range(args.iter_num):
        if i == args.begin_profiling_iter:
            t0 = time.process_time()
            mx.profiler.set_state("run")
        if i == args.end_profiling_iter:
            t1 = time.process_time()
            mx.profiler.set_state("stop")
        executor.forward()
        c = executor.outputs[0]
        c.wait_to_read()
    print("execution end")
    duration = t1 - t0
    print("duration: {0}s".format(duration))
    print("          {0}ms/operator".format(duration * 1000 / args.iter_num))
