"""The MXNet profiler guide's executor example, run on nanomx.

An MLP (784 -> 128 x 4 -> 10, ReLU, SoftmaxOutput) trained through mx.mod.Module on one
random batch of 128: Xavier(magnitude=2) initialization, 'ccsgd' with learning rate 0.0001,
10 warm-up iterations, then --iter_num profiled iterations of forward, backward and update
(profile_executor_5iter.json, written when the script ends). It prints the milliseconds per
iteration (time.process_time(): the process's CPU time, MXNet 1.x's time.clock()).

--mirror turns on recompute in backward (MXNET_BACKWARD_DO_MIRROR: the activations are
recomputed instead of kept, the job of the `memonger` project the guide imports; no import is
needed here) and prints the executor's planned internal bytes with and without it. For this
MLP recompute costs bytes rather than saving them: a ReLU recomputed in backward needs its
input, the FullyConnected output, kept until then, while without recompute the ReLU's backward
needs only its output, which the next layer's backward keeps anyway. (memonger pays off on deep
networks of cheap layers, where whole stages are recomputed from a few kept checkpoints.)
--ctx cpu|gpu picks the device (gpu falls back to cpu without a GPU).

Run from a checkout: PYTHONPATH=python /usr/bin/python3 examples/profiler/profiler_executor.py
"""
import argparse
import os
import time

import numpy as np

import nanomx as mx
from nanomx import profiler


def parse_args():
    parser = argparse.ArgumentParser(description="Set network parameters for benchmark test.")
    parser.add_argument("--profile_filename", type=str, default="profile_executor_5iter.json")
    parser.add_argument("--iter_num", type=int, default=5)
    parser.add_argument("--fc1", type=int, default=128)
    parser.add_argument("--fc2", type=int, default=128)
    parser.add_argument("--fc3", type=int, default=128)
    parser.add_argument("--fc4", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--dry_run", type=int, default=10, help="warm-up iterations")
    parser.add_argument("--ctx", type=str, default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--mirror", action="store_true",
                        help="recompute activations in backward; print planned bytes")
    return parser.parse_args()


def get_symbol(args):
    data = mx.sym.Variable("data")
    net = data
    for i, hidden in enumerate([args.fc1, args.fc2, args.fc3, args.fc4], start=1):
        net = mx.sym.FullyConnected(net, name="fc%d" % i, num_hidden=hidden)
        net = mx.sym.Activation(net, name="relu%d" % i, act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc5", num_hidden=10)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def get_module(ctx, sym, provide_data, provide_label, batch_size=None, is_train=True,
               mirror=False):
    mod = mx.mod.Module(symbol=sym, data_names=[name for name, _ in provide_data],
                        label_names=[name for name, _ in provide_label], context=ctx)
    if batch_size is not None:
        provide_data = [(name, (batch_size,) + shape[1:]) for name, shape in provide_data]
        provide_label = [(name, (batch_size,) + shape[1:]) for name, shape in provide_label]
    saved = os.environ.get("MXNET_BACKWARD_DO_MIRROR")
    os.environ["MXNET_BACKWARD_DO_MIRROR"] = "1" if mirror else "0"
    try:
        mod.bind(data_shapes=provide_data, label_shapes=provide_label, for_training=is_train,
                 inputs_need_grad=False)
    finally:
        if saved is None:
            del os.environ["MXNET_BACKWARD_DO_MIRROR"]
        else:
            os.environ["MXNET_BACKWARD_DO_MIRROR"] = saved
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.))
    mod.init_optimizer(optimizer="ccsgd", optimizer_params={"learning_rate": 0.0001,
                                                             "momentum": 0.0, "wd": 0.0})
    return mod


def planned(mod):
    """(planned bytes, the debug_str line 'Total <N> MB allocated') of the module's executor."""
    executor = mod._exec_group.execs[0]
    total_line = executor.debug_str().split("\n")[-3]
    return executor._planned_bytes()[0], total_line


def benchmark(mod, dry_run=10, iterations=10):
    ctx = mod._context[0]
    data = [mx.random.uniform(-1.0, 1.0, shape=shape, ctx=ctx) for _, shape in mod.data_shapes]
    label = [mx.nd.array(np.random.randint(1, 100, size=shape), ctx=ctx)
             for _, shape in mod.label_shapes]
    batch = mx.io.DataBatch(data, label)
    for _ in range(dry_run):
        mod.forward(batch, is_train=True)
        mod.backward()
        for output in mod.get_outputs(merge_multi_context=False)[0]:
            output.wait_to_read()
        mod.update()
    t0 = time.process_time()
    profiler.set_state("run")
    for _ in range(iterations):
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
        for output in mod.get_outputs(merge_multi_context=False)[0]:
            output.wait_to_read()
    profiler.set_state("stop")
    t1 = time.process_time()
    return (t1 - t0) * 1000.0 / iterations


def executor(args):
    ctx = mx.cpu(0)
    if args.ctx == "gpu":
        if mx.context.num_gpus() > 0:
            ctx = mx.gpu(0)
        else:
            print("no GPU found: running on cpu(0)")
    sym = get_symbol(args)
    shapes = ([("data", (args.batch_size, 1, 28, 28))], [("softmax_label", (args.batch_size,))])
    mod = get_module([ctx], sym, *shapes, batch_size=args.batch_size, mirror=args.mirror)
    if args.mirror:
        plain = get_module([ctx], sym, *shapes, batch_size=args.batch_size, mirror=False)
        without_bytes, without_line = planned(plain)
        with_bytes, with_line = planned(mod)
        print("planned bytes without mirror: {0} ({1})".format(without_bytes, without_line))
        print("planned bytes with mirror: {0} ({1})".format(with_bytes, with_line))
    return benchmark(mod, dry_run=args.dry_run, iterations=args.iter_num)


if __name__ == "__main__":
    args = parse_args()
    mx.profiler.set_config(profile_symbolic=True, filename=args.profile_filename)
    print("profile file save to {0}".format(args.profile_filename))
    print("executor num_iteration: {0}".format(args.iter_num))
    print("executor {0} ms / iteration".format(executor(args)))
