"""Module training through dist_sync (run with -n 2 -s 1) matches single-process training on
the same data: each worker takes half of every batch, the servers sum the halves' gradients
(rescale_grad = 1 / (batch x workers)) and run SGD, so the weights after training equal those
of one process training on the whole batches."""
import numpy as np

import nanomx as mx


def symbol():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc1", num_hidden=16)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=4)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def train(kvstore, data, labels, batch, arg_params):
    it = mx.io.NDArrayIter(data, labels, batch, shuffle=False, label_name="softmax_label")
    mod = mx.mod.Module(symbol(), context=mx.cpu())
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in arg_params.items()},
                    aux_params={}, allow_missing=False)
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd",
                       optimizer_params={"learning_rate": 0.5})
    for _ in range(3):
        it.reset()
        for b in it:
            mod.forward(b, is_train=True)
            mod.backward()
            mod.update()
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


rng = np.random.RandomState(0)
data = rng.normal(size=(80, 10)).astype(np.float32)
labels = rng.randint(0, 4, size=80).astype(np.float32)
init = {"fc1_weight": rng.normal(0, 0.3, (16, 10)), "fc1_bias": np.zeros(16),
        "fc2_weight": rng.normal(0, 0.3, (4, 16)), "fc2_bias": np.zeros(4)}
init = {k: v.astype(np.float32) for k, v in init.items()}

kv = mx.kv.create("dist_sync")
W, rank = kv.num_workers, kv.rank
batch = 20
# worker r: rows r, r + W, ... so that global batch i is the union of the workers' batches i
dist = train(kv, data[rank::W], labels[rank::W], batch // W, init)
order = np.concatenate([np.arange(i, i + batch).reshape(-1, W).T.ravel()
                        for i in range(0, len(data), batch)])
# the same global batches in one process (the rows of each batch in the workers' order)
local = train("local", data[order], labels[order], batch, init)
for name in sorted(local):
    assert np.allclose(dist[name], local[name], rtol=1e-4, atol=1e-5), \
        (name, np.abs(dist[name] - local[name]).max())
    assert not np.allclose(dist[name], init[name]), name + " did not train"
kv.barrier()
print("rank %d: Module through dist_sync matches single-process training" % rank)
