"""Files and data sets for mx.test_utils: download, the MNIST and CIFAR-10 getters, the
zip/bz2 helpers, get_im2rec_path, and DummyIter. Private: nanomx.test_utils re-exports every
public name here; import them from there.

The getters read local copies (in the current folder or data/) and otherwise try to download;
when that fails they raise RuntimeError naming the files needed. They download through
mx.test_utils.download, looked up when called, so that replacing it there (as a test does to
simulate being offline) reaches every getter. get_mnist_iterator raises NotImplementedError
(nanomx has no mx.io.MNISTIter).
"""
import bz2
import gzip
import logging
import os
import struct
import sys
import zipfile

import numpy as np

from .io import DataIter

mx = sys.modules[__name__.rpartition(".")[0]]


# ---- files and data sets ----
def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Fetches `url` (urllib: http, https, file) into fname / dirname; an existing file is kept
    unless overwrite. Returns the file name; the last error after `retries` retries."""
    import urllib.request
    if retries < 0:
        raise ValueError("Number of retries should be at least 0")
    fname = fname or url.split("/")[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname):
        logging.info("%s exists, skipping download", fname)
        return fname
    for attempt in range(retries + 1):
        try:
            with urllib.request.urlopen(url, timeout=30) as response, open(fname, "wb") as f:
                while True:
                    chunk = response.read(1 << 20)
                    if not chunk:
                        break
                    f.write(chunk)
            return fname
        except Exception:  # noqa: BLE001 (retried, then re-raised)
            if attempt == retries:
                raise
            print("download failed, retrying, %d attempt(s) left" % (retries - attempt))
    return fname


def _fetch(what, files, fetch):
    """Runs fetch(); a failure becomes a RuntimeError naming the local files it needed."""
    try:
        return fetch()
    except Exception as e:  # noqa: BLE001
        raise RuntimeError("%s: the data set is not available locally (%s) and could not be "
                           "downloaded (%s: %s); put the files there and retry"
                           % (what, ", ".join(files), type(e).__name__, e)) from e


def get_mnist():
    """MNIST as {'train_data', 'train_label', 'test_data', 'test_label'} numpy arrays (images
    N x 1 x 28 x 28 float32 in [0, 1]), from the .gz files in the current directory or
    downloaded there."""
    base = "http://data.mxnet.io/data/mnist/"
    names = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"]

    def read(label_name, image_name):
        with gzip.open(mx.test_utils.download(base + label_name)) as f:
            struct.unpack(">II", f.read(8))
            label = np.frombuffer(f.read(), dtype=np.int8)
        with gzip.open(mx.test_utils.download(base + image_name), "rb") as f:
            _, _, rows, cols = struct.unpack(">IIII", f.read(16))
            image = np.frombuffer(f.read(), dtype=np.uint8).reshape(len(label), 1, rows, cols)
        return label, image.astype(np.float32) / 255

    train_lbl, train_img = _fetch("get_mnist", names, lambda: read(names[0], names[1]))
    test_lbl, test_img = _fetch("get_mnist", names, lambda: read(names[2], names[3]))
    return {"train_data": train_img, "train_label": train_lbl,
            "test_data": test_img, "test_label": test_lbl}


def _get_zip_dataset(what, url, wanted):
    os.makedirs("data", exist_ok=True)
    if all(os.path.exists(os.path.join("data", w)) for w in wanted):
        return
    path = _fetch(what, [os.path.join("data", w) for w in wanted],
                  lambda: mx.test_utils.download(url, dirname="data"))
    with zipfile.ZipFile(path) as zf:
        zf.extractall("data")


def get_mnist_pkl():
    """data/mnist.pkl.gz, downloaded when absent."""
    os.makedirs("data", exist_ok=True)
    if not os.path.exists("data/mnist.pkl.gz"):
        _fetch("get_mnist_pkl", ["data/mnist.pkl.gz"], lambda: mx.test_utils.download(
            "http://deeplearning.net/data/mnist/mnist.pkl.gz", dirname="data"))


def get_mnist_ubyte():
    """The four MNIST ubyte files in data/, downloaded and unzipped when absent."""
    _get_zip_dataset("get_mnist_ubyte", "http://data.mxnet.io/mxnet/data/mnist.zip",
                     ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                      "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"])


def get_cifar10():
    """CIFAR-10's .rec/.lst files in data/cifar/, downloaded and unzipped when absent."""
    _get_zip_dataset("get_cifar10", "http://data.mxnet.io/mxnet/data/cifar10.zip",
                     ["cifar/train.rec", "cifar/test.rec", "cifar/train.lst", "cifar/test.lst"])


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """(train, val) MNISTIter iterators: NotImplementedError, nanomx has no mx.io.MNISTIter."""
    if not hasattr(mx.io, "MNISTIter"):
        raise NotImplementedError("get_mnist_iterator needs mx.io.MNISTIter, which nanomx does "
                                  "not have; use get_mnist() with mx.io.NDArrayIter")
    get_mnist_ubyte()
    flat = len(input_shape) != 3
    common = dict(input_shape=input_shape, batch_size=batch_size, flat=flat,
                  num_parts=num_parts, part_index=part_index)
    return (mx.io.MNISTIter(image="data/train-images-idx3-ubyte",
                            label="data/train-labels-idx1-ubyte", shuffle=True, **common),
            mx.io.MNISTIter(image="data/t10k-images-idx3-ubyte",
                            label="data/t10k-labels-idx1-ubyte", **common))


def get_zip_data(data_dir, url, data_origin_name):
    """Downloads `url` into data_dir and unzips it there, unless data_origin_name exists."""
    path = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(path):
        mx.test_utils.download(url, dirname=data_dir, overwrite=False)
        with zipfile.ZipFile(path) as zf:
            zf.extractall(path=data_dir)


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Downloads the bz2 file at `url` and decompresses it to data_dir/data_name."""
    data_name = os.path.join(data_dir, data_name)
    origin = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(data_name):
        mx.test_utils.download(url, fname=origin, dirname=data_dir, overwrite=False)
        with bz2.BZ2File(origin, "rb") as src, open(data_name, "wb") as dst:
            for line in src:
                dst.write(line)
        os.remove(origin)


def get_im2rec_path(home_env="MXNET_HOME"):
    """Path of the im2rec tool (nanomx ships it as nanomx/tools/im2rec.py)."""
    root = os.environ.get(home_env, os.path.dirname(os.path.abspath(mx.__file__)))
    for candidate in (os.path.join(root, "tools", "im2rec.py"),
                      os.path.join(root, "..", "..", "tools", "im2rec.py")):
        if os.path.isfile(candidate):
            return candidate
    raise IOError("Could not find path to tools/im2rec.py")


# ---- iterators ----
class DummyIter(DataIter):
    """Returns the first batch of `real_iter` forever (for timing without data loading)."""

    def __init__(self, real_iter):
        super(DummyIter, self).__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        return self.the_batch
