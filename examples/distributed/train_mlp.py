"""Data-parallel training of the profiler guide's MLP (784 -> 128 x 4 -> 10, ReLU,
SoftmaxOutput) through mx.mod.Module and a distributed KVStore (docs/kvstore.md).

    python3 -m nanomx.tools.launch -n 2 -s 1 python3 examples/distributed/train_mlp.py

Every worker trains on its share of a synthetic 10-class data set (class means plus noise, so
that it can be learned); the servers sum each round's gradients and run SGD. Each worker prints
its accuracy on the whole set and its time per training step; with --profile every rank writes
its trace (rank<r>_train_mlp_worker.json, and through profile_process='server'
rank<r>_train_mlp_server.json), which `nanomx-trace merge rank*_train_mlp_*.json` lines up on
one timeline. Without the launcher, --kvstore local trains in one process (the 1-worker
baseline of bench/compare_kvstore.py).
"""
import argparse
import time

import numpy as np

import nanomx as mx
from nanomx import profiler


def parse_args():
    parser = argparse.ArgumentParser(description="Train an MLP on several workers.")
    parser.add_argument("--kvstore", type=str, default="dist_sync")
    parser.add_argument("--num-examples", type=int, default=2560)
    parser.add_argument("--batch-size", type=int, default=128,
                        help="the global batch; each of W workers takes batch-size / W rows")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--profile", action="store_true",
                        help="write each worker's and each server's trace")
    return parser.parse_args()


def get_symbol():
    net = mx.sym.Variable("data")
    for i in range(1, 5):
        net = mx.sym.FullyConnected(net, name="fc%d" % i, num_hidden=128)
        net = mx.sym.Activation(net, name="relu%d" % i, act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc5", num_hidden=10)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def synthetic_data(num_examples, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.normal(0, 0.25, size=(10, 784)).astype(np.float32)
    labels = rng.randint(0, 10, size=num_examples)
    data = centers[labels] + rng.normal(0, 1.0, size=(num_examples, 784)).astype(np.float32)
    return data.astype(np.float32), labels.astype(np.float32)


def main():
    args = parse_args()
    kv = mx.kv.create(args.kvstore)
    rank, workers = kv.rank, kv.num_workers
    if args.profile:
        if "dist" in kv.type:
            profiler.set_config(filename="train_mlp_server.json", profile_all=True,
                                profile_process="server")
            profiler.set_state("run", profile_process="server")
        profiler.set_config(filename="rank%d_train_mlp_worker.json" % rank, profile_all=True)
        profiler.set_state("run")

    data, labels = synthetic_data(args.num_examples)
    per_worker = args.batch_size // workers
    # worker r takes rows r, r + W, ...: each global batch is split evenly across the workers
    train = mx.io.NDArrayIter(data[rank::workers], labels[rank::workers], per_worker,
                              shuffle=False, label_name="softmax_label")
    mod = mx.mod.Module(get_symbol(), context=mx.cpu())
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mx.random.seed(42)
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    mod.init_optimizer(kvstore=kv, optimizer="sgd",
                       optimizer_params={"learning_rate": args.lr})
    steps = 0
    start = time.time()
    for _ in range(args.epochs):
        train.reset()
        for batch in train:
            mod.forward(batch, is_train=True)
            mod.backward()
            mod.update()
            steps += 1
    mx.nd.waitall()
    elapsed = time.time() - start

    test = mx.io.NDArrayIter(data, labels, 256, label_name="softmax_label")
    accuracy = mod.score(test, "acc")[0][1]
    print("rank %d of %d: accuracy %.4f, %d steps, %.2f ms per step, %.2f s in all"
          % (rank, workers, accuracy, steps, 1000.0 * elapsed / max(steps, 1), elapsed),
          flush=True)
    if args.profile:
        profiler.set_state("stop")
        profiler.dump(finished=True)
        if "dist" in kv.type:
            profiler.set_state("stop", profile_process="server")
            profiler.dump(finished=True, profile_process="server")
    kv.barrier()


if __name__ == "__main__":
    main()
