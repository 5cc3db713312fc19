"""Profiling a Gluon training loop: a model-zoo ResNet-18, hybridized, trained on the sample
RecordIO file (scripts/make-sample-rec) through ImageRecordDataset + DataLoader + Trainer, with
every profiler source on. It prints images/s and the aggregate table and writes
profile_gluon.json: the data side (the DataLoader's worker threads decoding and resizing, the
wait for a batch) and the model side (each layer's operators, named after its block:
resnetv10_stage1_conv0_fwd, ...) are rows of one timeline.

    cd out && PYTHONPATH=../python /usr/bin/python3 ../examples/profiler/profiler_gluon.py
"""
import argparse
import os
import sys
import time

import numpy as np

import nanomx as mx
from nanomx import gluon
from nanomx.gluon.model_zoo import vision


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rec", default="test.rec")
    parser.add_argument("--batches", type=int, default=8, help="training steps (a short epoch)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--size", type=int, default=112, help="images are resized to size²")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="profile_gluon.json")
    args = parser.parse_args()
    if not os.path.exists(args.rec):
        sys.exit("%s not found in %s: make one with scripts/make-sample-rec" %
                 (args.rec, os.getcwd()))

    mean = mx.nd.array([123.68, 116.78, 103.94]).reshape((3, 1, 1))
    std = mx.nd.array([58.4, 57.12, 57.38]).reshape((3, 1, 1))

    def prepare(image, label):
        # Decoded (H, W, 3) uint8 -> resized (3, size, size) float32, normalised; label as int.
        image = mx.image.imresize(image, args.size, args.size)
        image = (mx.nd.transpose(image.astype("float32"), axes=(2, 0, 1)) - mean) / std
        return image, np.float32(int(np.asarray(label).reshape(-1)[0]) % 10)

    dataset = gluon.data.vision.ImageRecordDataset(args.rec, transform=prepare)
    loader = gluon.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                                   last_batch="discard", num_workers=args.workers)

    net = vision.resnet18_v1(classes=10)
    net.initialize(mx.init.Xavier(magnitude=2))
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05, "momentum": 0.9})

    # One untimed step: deferred initialization, graph binding and oneDNN's primitive creation.
    batches = iter(loader)
    data, label = next(batches)
    with mx.autograd.record():
        loss = loss_fn(net(data), label)
    loss.backward()
    trainer.step(args.batch_size)
    mx.nd.waitall()

    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=args.out)
    mx.profiler.set_state("run")
    seen, tic = 0, time.time()
    for step, (data, label) in enumerate(batches):
        if step == args.batches:
            break
        with mx.autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(args.batch_size)
        seen += data.shape[0]
        mx.profiler.step()
    mx.nd.waitall()
    elapsed = time.time() - tic
    mx.profiler.set_state("stop")
    print("trained %d images in %.2f s: %.1f images/s, last loss %.4f"
          % (seen, elapsed, seen / elapsed, float(loss.mean().asscalar())))
    print(mx.profiler.dumps())
    mx.profiler.dump()


if __name__ == "__main__":
    main()
