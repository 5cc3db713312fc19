#!/usr/bin/env python3
"""The symbolic executor beside its floors and peers, measured in one run (README's executor table).

    PYTHONPATH=python /usr/bin/python3 bench/compare_symbolic.py [--quick]

Rows:
- dot of two 4096x4096 float32 matrices through simple_bind + forward + wait_to_read, beside
  the same product by a direct cblas_sgemm call into the OpenBLAS nanomx links (ctypes, no
  runtime at all): the physical floor of the executor's matmul.
- the guide's executor example (MLP 784-128x4-10, batch 128, SoftmaxOutput, Xavier, SGD) through
  mx.mod.Module: ms per iteration of forward + backward + update, beside the same MLP and step
  in torch on the CPU (Debian's python3-torch, for this benchmark only; "n/a" without it).
- executor overhead per node: a chain of 100 `+ 1` nodes on a 10-element array, forward +
  wait, time per node; beside torch's eager loop of the same 100 ops.
Each figure is the best of several repetitions (a shared 2-core VM is noisy).
"""
import argparse
import ctypes
import json
import ctypes.util
import os
import sys

import numpy as np

import timing

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import nanomx as mx  # noqa: E402

try:
    import torch
except ImportError:  # the benchmark runs without torch, with n/a in its columns
    torch = None


def best_of(fn, repeats):
    """Least wall time of `repeats` runs, after one unmeasured warm-up run."""
    return timing.best_of(fn, repeats, warm_up=True)


def openblas():
    for name in ("libopenblas.so.0", ctypes.util.find_library("openblas"), "libblas.so.3"):
        if name:
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    return None


def dot_rows(n, repeats):
    a = mx.sym.Variable("A")
    b = mx.sym.Variable("B")
    exe = mx.sym.dot(a, b).simple_bind(mx.cpu(), "write", A=(n, n), B=(n, n))
    mx.random.uniform(-1.0, 1.0, shape=(n, n)).copyto(exe.arg_dict["A"])
    mx.random.uniform(-1.0, 1.0, shape=(n, n)).copyto(exe.arg_dict["B"])

    def run_exec():
        exe.forward()
        exe.outputs[0].wait_to_read()
    t_exec = best_of(run_exec, repeats)

    t_blas = None
    lib = openblas()
    if lib is not None:
        x = np.random.uniform(-1, 1, (n, n)).astype(np.float32)
        y = np.random.uniform(-1, 1, (n, n)).astype(np.float32)
        z = np.empty((n, n), np.float32)
        ptr = ctypes.POINTER(ctypes.c_float)
        lib.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ptr, ctypes.c_int, ptr,
                                                         ctypes.c_int, ctypes.c_float, ptr,
                                                         ctypes.c_int]
        args = (101, 111, 111, n, n, n, 1.0, x.ctypes.data_as(ptr), n, y.ctypes.data_as(ptr), n,
                0.0, z.ctypes.data_as(ptr), n)  # row major, no transposes
        t_blas = best_of(lambda: lib.cblas_sgemm(*args), repeats)
    return t_exec, t_blas


def mlp_symbol(hidden=128):
    net = mx.sym.Variable("data")
    for i in range(1, 5):
        net = mx.sym.FullyConnected(net, name="fc%d" % i, num_hidden=hidden)
        net = mx.sym.Activation(net, name="relu%d" % i, act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc5", num_hidden=10)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def nanomx_mlp(iters, repeats, batch=128):
    mod = mx.mod.Module(mlp_symbol(), data_names=["data"], label_names=["softmax_label"],
                        context=[mx.cpu(0)])
    mod.bind(data_shapes=[("data", (batch, 1, 28, 28))], label_shapes=[("softmax_label", (batch,))],
             for_training=True, inputs_need_grad=False)
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    mod.init_optimizer(optimizer="ccsgd",
                       optimizer_params={"learning_rate": 0.0001, "momentum": 0.0, "wd": 0.0})
    data = [mx.random.uniform(-1.0, 1.0, shape=(batch, 1, 28, 28))]
    label = [mx.nd.array(np.random.randint(0, 10, (batch,)))]
    data_batch = mx.io.DataBatch(data, label)

    def run():
        for _ in range(iters):
            mod.forward(data_batch, is_train=True)
            mod.backward()
            mod.update()
        for out in mod.get_outputs():
            out.wait_to_read()
    return best_of(run, repeats) / iters


def torch_mlp(iters, repeats, batch=128):
    if torch is None:
        return None
    layers = []
    width = 784
    for _ in range(4):
        layers += [torch.nn.Linear(width, 128), torch.nn.ReLU()]
        width = 128
    layers.append(torch.nn.Linear(128, 10))
    net = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(net.parameters(), lr=0.0001, momentum=0.0, weight_decay=0.0)
    loss_fn = torch.nn.CrossEntropyLoss()
    data = torch.empty(batch, 1, 28, 28).uniform_(-1, 1)
    label = torch.randint(0, 10, (batch,))

    def run():
        for _ in range(iters):
            opt.zero_grad()
            loss = loss_fn(net(data.flatten(1)), label)
            loss.backward()
            opt.step()
    return best_of(run, repeats) / iters


def nanomx_chain(nodes, iters, repeats):
    net = mx.sym.Variable("data")
    for _ in range(nodes):
        net = net + 1
    exe = net.simple_bind(mx.cpu(), grad_req="null", data=(10,))

    def run():
        for _ in range(iters):
            exe.forward()
        exe.outputs[0].wait_to_read()
    return best_of(run, repeats) / (iters * nodes)


def torch_chain(nodes, iters, repeats):
    if torch is None:
        return None
    x0 = torch.ones(10)

    def run():
        for _ in range(iters):
            x = x0
            for _ in range(nodes):
                x = x + 1
    return best_of(run, repeats) / (iters * nodes)


def fmt(v, scale, unit):
    return "n/a" if v is None else "%.3g %s" % (v * scale, unit)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--json", help="also write the rows to this file (bench/run_benchmarks.py)")
    args = parser.parse_args()
    n = 1024 if args.quick else 4096
    repeats = 2 if args.quick else 5
    mlp_iters = 5 if args.quick else 50
    chain_iters = 20 if args.quick else 300

    t_exec, t_blas = dot_rows(n, repeats)
    flops = 2.0 * n ** 3
    print("| measure | nanomx | peer / floor | ratio |")
    print("|---|---|---|---|")
    print("| %d² `dot`: executor forward vs direct `cblas_sgemm` | %s (%.1f GFLOP/s) | %s | %s |"
          % (n, fmt(t_exec, 1e3, "ms"), flops / t_exec / 1e9, fmt(t_blas, 1e3, "ms"),
             "n/a" if t_blas is None else "%.2f× of sgemm's speed" % (t_blas / t_exec)))
    m_nano = nanomx_mlp(mlp_iters, repeats)
    m_torch = torch_mlp(mlp_iters, repeats)
    print("| executor example MLP, ms per iteration (fwd+bwd+update) vs torch %s | %s | %s | %s |"
          % (torch.__version__ if torch else "", fmt(m_nano, 1e3, "ms"),
             fmt(m_torch, 1e3, "ms"),
             "n/a" if m_torch is None else "%.2f× torch's time" % (m_nano / m_torch)))
    c_nano = nanomx_chain(100, chain_iters, repeats)
    c_torch = torch_chain(100, chain_iters, repeats)
    print("| executor overhead per node, 100-node chain of 10-element `+1` vs torch eager | %s | %s"
          " | %s |" % (fmt(c_nano, 1e6, "µs"), fmt(c_torch, 1e6, "µs"),
                       "n/a" if c_torch is None else "%.2f× torch's time" % (c_nano / c_torch)))
    if args.json:
        area = "Symbolic executor"
        rows = [
            {"area": area, "what": "%d² `dot` through simple_bind + forward" % n,
             "unit": "GFLOP/s", "nanomx": flops / t_exec / 1e9,
             "reference": flops / t_blas / 1e9 if t_blas else None, "reference_kind": "floor",
             "reference_label": "direct `cblas_sgemm`", "better": "higher", "target": "≥ 0.95×"},
            {"area": area, "what": "executor example MLP, forward + backward + update",
             "unit": "ms", "nanomx": m_nano * 1e3,
             "reference": m_torch * 1e3 if m_torch else None, "reference_kind": "peer",
             "reference_label": "torch", "better": "lower", "target": "≤ 1.0× torch"},
            {"area": area, "what": "executor overhead per node (100-node chain, 10 elements)",
             "unit": "µs", "nanomx": c_nano * 1e6,
             "reference": c_torch * 1e6 if c_torch else None, "reference_kind": "peer",
             "reference_label": "torch eager", "better": "lower", "target": "≤ 1 µs"},
        ]
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f)


if __name__ == "__main__":
    main()
