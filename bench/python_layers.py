#!/usr/bin/env python3
"""Where a 10-element `a + b` from Python spends its time, layer by layer (docs/python.md).

    PYTHONPATH=python /usr/bin/python3 bench/python_layers.py [--quick]

Each row enters the same operator (broadcast_add) by another door, from the most Python to the
least, so the difference between two rows is what the layer between them costs:
  1. `mx.nd.broadcast_add(a, b)`    the generated operator function (keyword handling)
  2. `_invoke(handle, (a, b))`      the package's one Python-level call into the extension
  3. `_LIB.invoke(handle, (a, b), (), (), None)`   the extension function itself (argument
                                    conversion, MXImperativeInvoke, wrapping the result)
  4. `a + b`                        the NDArray type's number slot, straight into C++ (no Python
                                    frame at all): the path every arithmetic operator takes
  5. `a += b`                       the same without a result object (writes a)
The C API and below (handle checks, parse, inference, engine, kernel) are measured in C++ by
bench/runtime/c_api_bench (MXImperativeInvoke + MXNDArrayFree) and runtime_bench (ops::invoke).
Each figure is the best of several runs of many calls, ending with a wait for the last result.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import nanomx as mx  # noqa: E402
from nanomx.ndarray import ndarray as nd_module  # noqa: E402


def best_per_call(fn, calls, repeats):
    fn(min(calls, 1000))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(calls)
        best = min(best, time.perf_counter() - start)
    return best / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    calls = 5000 if args.quick else 50000
    repeats = 3 if args.quick else 7
    a = mx.nd.ones((10,))
    b = mx.nd.ones((10,))
    out = mx.nd.zeros((10,))
    handle = nd_module._op_handle("broadcast_add")
    invoke = nd_module._invoke
    lib = nd_module._LIB

    def operator_loop(n):
        for _ in range(n):
            a + b
        mx.nd.waitall()

    def function_loop(n):
        for _ in range(n):
            mx.nd.broadcast_add(a, b)
        mx.nd.waitall()

    def in_place_loop(n):
        c = mx.nd.zeros((10,))
        for _ in range(n):
            c += b
        mx.nd.waitall()

    def invoke_loop(n):
        for _ in range(n):
            invoke(handle, (a, b))
        mx.nd.waitall()

    def extension_loop(n):
        for _ in range(n):
            lib.invoke(handle, (a, b), (), (), None)
        mx.nd.waitall()

    def extension_out_loop(n):
        for _ in range(n):
            lib.invoke(handle, (a, b), (), (), out)
        mx.nd.waitall()

    rows = [("`mx.nd.broadcast_add(a, b)`", function_loop),
            ("`_invoke(handle, (a, b))`", invoke_loop),
            ("extension `invoke`, new result", extension_loop),
            ("`a + b` (type slot, C++ all the way)", operator_loop),
            ("`c += b` (type slot, no result object)", in_place_loop),
            ("extension `invoke`, `out=` given", extension_out_loop)]
    times = [(name, best_per_call(fn, calls, repeats)) for name, fn in rows]
    print("| entry point (10-element add, %s engine) | per call | the layer above costs |"
          % os.environ.get("NANOMX_ENGINE_TYPE", "default"))
    print("|---|---|---|")
    for i, (name, t) in enumerate(times):
        above = "" if i == 0 else "%.0f ns" % ((times[i - 1][1] - t) * 1e9)
        print("| %s | %.0f ns | %s |" % (name, t * 1e9, above))


if __name__ == "__main__":
    main()
