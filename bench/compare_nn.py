#!/usr/bin/env python3
"""The neural-network operators beside torch, measured in one run (README's NN table).

    PYTHONPATH=python /usr/bin/python3 bench/compare_nn.py [--quick] [--json rows.json]

Rows (float32, both sides on the same number of intra-op threads: nanomx's default, the cores
divided among the CPU engine workers, which torch is set to with torch.set_num_threads):
- Convolution 3x3, 64->64 channels, 56x56, batch 16, forward + backward (data and weight
  gradients) through mx.autograd vs torch autograd;
- BatchNorm (training) and max Pooling (3x3, stride 2, pad 1) of the same tensor, forward +
  backward;
- ResNet-18 (3x112x112, batch 16) forward + backward through mx.sym + simple_bind vs the same
  network in torch; its inference (an executor bound with grad_req='null', fused, forward with
  is_train=False) vs torch eager under no_grad;
- what profile_all adds to that training step (on vs off, interleaved pairs).
Each figure is the best of several repetitions (the least disturbed on a shared machine); the
profiling cost is the median ratio of interleaved pairs.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import nanomx as mx  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the benchmark runs without torch, with n/a in its columns
    torch = None


def intra_op_threads():
    for name in ("NANOMX_OMP_MAX_THREADS", "MXNET_OMP_MAX_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(name, "").isdigit() and int(os.environ[name]) >= 1:
            return int(os.environ[name])
    workers = int(os.environ.get("MXNET_CPU_WORKER_NTHREADS",
                                 os.environ.get("NANOMX_CPU_WORKER_NTHREADS", "1")))
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def best(fn, repeats):
    fn()  # warm up: primitive creation, allocator pools
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


# ---- single operators --------------------------------------------------------------------

def nanomx_op(shape, forward, repeats, params=()):
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, shape).astype(np.float32))
    x.attach_grad()
    for p in params:
        p.attach_grad()

    def step():
        with mx.autograd.record():
            y = forward(x)
        y.backward(mx.nd.ones(y.shape))
        mx.nd.waitall()
    return best(step, repeats)


def torch_op(shape, forward, repeats, params=()):
    x = torch.from_numpy(np.random.RandomState(0).uniform(-1, 1, shape).astype(np.float32))
    x.requires_grad_(True)
    for p in params:
        p.requires_grad_(True)

    def step():
        y = forward(x)
        y.backward(torch.ones_like(y))
    return best(step, repeats)


def op_rows(quick, repeats):
    n = 4 if quick else 16
    shape = (n, 64, 56, 56)
    rng = np.random.RandomState(1)
    w = rng.uniform(-0.1, 0.1, (64, 64, 3, 3)).astype(np.float32)
    b = np.zeros(64, np.float32)
    mw, mb = mx.nd.array(w), mx.nd.array(b)
    rows = []
    nano = nanomx_op(shape, lambda x: mx.nd.Convolution(x, mw, mb, kernel=(3, 3), pad=(1, 1),
                                                        num_filter=64), repeats, (mw, mb))
    ref = None
    if torch:
        tw, tb = torch.from_numpy(w), torch.from_numpy(b)
        ref = torch_op(shape, lambda x: F.conv2d(x, tw, tb, padding=1), repeats, (tw, tb))
    rows.append(("Convolution 3×3, 64→64, 56×56, batch %d, forward + backward" % n, nano, ref))

    gamma, beta = mx.nd.ones((64,)), mx.nd.zeros((64,))
    mean, var = mx.nd.zeros((64,)), mx.nd.ones((64,))
    nano = nanomx_op(shape, lambda x: mx.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=False),
                     repeats, (gamma, beta))
    ref = None
    if torch:
        tg, tbeta = torch.ones(64), torch.zeros(64)
        tm, tv = torch.zeros(64), torch.ones(64)
        ref = torch_op(shape, lambda x: F.batch_norm(x, tm, tv, tg, tbeta, training=True,
                                                     momentum=0.1, eps=1e-3), repeats, (tg, tbeta))
    rows.append(("BatchNorm (training) of (%d, 64, 56, 56), forward + backward" % n, nano, ref))

    nano = nanomx_op(shape, lambda x: mx.nd.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                                    pool_type="max"), repeats)
    ref = None
    if torch:
        ref = torch_op(shape, lambda x: F.max_pool2d(x, 3, 2, 1), repeats)
    rows.append(("max Pooling 3×3 stride 2 of (%d, 64, 56, 56), forward + backward" % n,
                 nano, ref))
    return rows


# ---- ResNet-18 ---------------------------------------------------------------------------

def resnet18_symbol(classes=1000):
    def conv_bn(x, name, channels, kernel, stride, pad, relu=True):
        x = mx.sym.Convolution(x, num_filter=channels, kernel=(kernel, kernel),
                               stride=(stride, stride), pad=(pad, pad), no_bias=True,
                               name=name + "_conv")
        x = mx.sym.BatchNorm(x, fix_gamma=False, eps=1e-5, momentum=0.9, name=name + "_bn")
        return mx.sym.Activation(x, act_type="relu") if relu else x

    def block(x, name, channels, stride, downsample):
        y = conv_bn(x, name + "a", channels, 3, stride, 1)
        y = conv_bn(y, name + "b", channels, 3, 1, 1, relu=False)
        shortcut = conv_bn(x, name + "d", channels, 1, stride, 0, relu=False) if downsample else x
        return mx.sym.Activation(y + shortcut, act_type="relu")

    x = conv_bn(mx.sym.Variable("data"), "stem", 64, 7, 2, 3)
    x = mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
    for stage, channels in enumerate((64, 128, 256, 512)):
        for i in range(2):
            stride = 2 if stage > 0 and i == 0 else 1
            x = block(x, "s%d_%d" % (stage, i), channels, stride, stage > 0 and i == 0)
    x = mx.sym.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="avg")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=classes, name="fc")
    return x


def nanomx_resnet(batch, size, repeats):
    """The training executor, and an inference one bound without gradients (as
    Module(for_training=False) binds), which nanomx fuses (docs/nn.md#inference-fusion)."""
    net = resnet18_symbol()
    # The data gets no gradient, as Module binds it (and as torch's input, which does not
    # require one).
    reqs = {name: "null" if name == "data" else "write" for name in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), grad_req=reqs, data=(batch, 3, size, size))
    inference = net.simple_bind(mx.cpu(), grad_req="null", data=(batch, 3, size, size))
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-0.05, 0.05, arr.shape).astype(np.float32)
        inference.arg_dict[name][:] = arr
    for name, arr in exe.aux_dict.items():
        arr[:] = 1 if name.endswith("var") else 0
        inference.aux_dict[name][:] = arr
    head = mx.nd.ones(exe.outputs[0].shape)

    def train():
        exe.forward(is_train=True)
        exe.backward(head)
        mx.nd.waitall()

    def infer():
        inference.forward(is_train=False)
        mx.nd.waitall()
    return exe, train, infer, (lambda: best(train, repeats)), (lambda: best(infer, repeats))


def torch_resnet(batch, size, repeats):
    import torch.nn as nn

    def conv_bn(cin, cout, k, s, p, relu=True):
        layers = [nn.Conv2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout, eps=1e-5)]
        return nn.Sequential(*(layers + [nn.ReLU()] if relu else layers))

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.a = conv_bn(cin, cout, 3, stride, 1)
            self.b = conv_bn(cout, cout, 3, 1, 1, relu=False)
            self.d = conv_bn(cin, cout, 1, stride, 0, relu=False) if stride != 1 or cin != cout \
                else None

        def forward(self, x):
            y = self.b(self.a(x))
            return torch.relu(y + (self.d(x) if self.d is not None else x))

    layers = [conv_bn(3, 64, 7, 2, 3), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for stage, c in enumerate((64, 128, 256, 512)):
        for i in range(2):
            layers.append(Block(cin, c, 2 if stage > 0 and i == 0 else 1))
            cin = c
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    model = nn.Sequential(*layers)
    x = torch.rand(batch, 3, size, size)

    def train():
        model.train()
        y = model(x)
        y.backward(torch.ones_like(y))

    def infer():
        model.eval()
        with torch.no_grad():
            model(x)
    return best(train, repeats), best(infer, repeats)


def profiling_cost(train, pairs):
    """Median of (step with profile_all on) / (step off), interleaved."""
    with tempfile.TemporaryDirectory() as d:
        mx.profiler.set_config(profile_all=True, filename=os.path.join(d, "profile.json"))
        ratios = []
        for _ in range(pairs):
            start = time.perf_counter()
            train()
            off = time.perf_counter() - start
            mx.profiler.set_state("run")
            start = time.perf_counter()
            train()
            on = time.perf_counter() - start
            mx.profiler.set_state("stop")
            ratios.append(on / off)
        mx.profiler.dump()
    ratios.sort()
    return ratios[len(ratios) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--json", help="also write the rows to this file (bench/run_benchmarks.py)")
    args = parser.parse_args()
    threads = intra_op_threads()
    if torch:
        torch.set_num_threads(threads)
    repeats = 2 if args.quick else 5
    rows = op_rows(args.quick, repeats)
    batch, size = (2, 64) if args.quick else (16, 112)
    _, train, _, time_train, time_infer = nanomx_resnet(batch, size, repeats)
    nano_train, nano_infer = time_train(), time_infer()
    torch_train, torch_infer = torch_resnet(batch, size, repeats) if torch else (None, None)
    cost = profiling_cost(train, 3 if args.quick else 7)
    rows.append(("ResNet-18 %d×3×%d×%d, forward + backward (mx.sym)" % (batch, size, size),
                 nano_train, torch_train))
    rows.append(("ResNet-18 %d×3×%d×%d, inference (fused executor) vs torch eager no_grad"
                 % (batch, size, size), nano_infer, torch_infer))
    print("threads: nanomx %d intra-op, torch %s" % (threads, torch.get_num_threads()
                                                     if torch else "n/a"))
    print("| measure | nanomx | torch | ratio |")
    print("|---|---|---|---|")
    for what, nano, ref in rows:
        print("| %s | %.2f ms | %s | %s |" % (what, nano * 1e3,
                                             "n/a" if ref is None else "%.2f ms" % (ref * 1e3),
                                             "" if ref is None else "%.2f×" % (nano / ref)))
    print("| profile_all on ÷ off, ResNet-18 training step | %.3f× | | |" % cost)
    if args.json:
        area = "Neural-network operators (float32, %d intra-op threads each side)" % threads
        targets = ["≤ 1.0× torch", "≤ 1.0× torch", "≤ 1.0× torch", "≤ 1.0× torch",
                   "≤ 0.8× torch"]
        out = [{"area": area, "what": what, "unit": "ms", "nanomx": nano * 1e3,
                "reference": ref * 1e3 if ref else None, "reference_kind": "peer",
                "reference_label": "torch", "better": "lower", "target": target}
               for (what, nano, ref), target in zip(rows, targets)]
        out.append({"area": area, "what": "profile_all on ÷ off, ResNet-18 training step",
                    "unit": "×", "nanomx": cost, "better": "lower", "target": "≤ 1.02×"})
        with open(args.json, "w") as f:
            json.dump({"rows": out}, f)


if __name__ == "__main__":
    main()
