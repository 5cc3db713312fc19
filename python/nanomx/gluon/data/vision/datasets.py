"""Image datasets (MXNet 1.x's gluon.data.vision.datasets).

MNIST, FashionMNIST, CIFAR10 and CIFAR100 read the files MXNet downloads, from `root`; nanomx
never downloads (there is no network), so a missing file is an MXNetError that names the files
to put there (as gluon.utils.download does); their SHA-1 is not checked. ImageRecordDataset
reads a RecordIO file of packed images and ImageFolderDataset a folder per class.
"""
import gzip
import os
import struct
import tarfile
import warnings

import numpy as np

from .. import dataset
from .... import image, ndarray as nd, recordio
from ....base import MXNetError

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100",
           "ImageRecordDataset", "ImageFolderDataset"]


def _missing(name, root, files):
    return MXNetError(
        "%s: %s not found in %s. nanomx does not download datasets (no network): copy "
        "MXNet's files there (%s)." % (name, ", ".join(files), root, ", ".join(files)))


def _open_maybe_gz(root, name):
    """Opens root/name, or root/name without its .gz suffix (an unpacked copy)."""
    path = os.path.join(root, name)
    if os.path.isfile(path):
        return gzip.open(path, "rb")
    plain = path[:-3] if path.endswith(".gz") else path
    if os.path.isfile(plain):
        return open(plain, "rb")
    return None


class MNIST(dataset._DownloadedDataset):
    """MNIST handwritten digits: samples are (uint8 NDArray (28, 28, 1), int32 label).

    root: folder with train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
        t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (or their unpacked copies);
        default $MXNET_HOME/datasets/mnist.
    train: the training set (True) or the test set.
    transform: fn(data, label) -> sample, applied on every read.
    """

    _train_files = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
    _test_files = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    _folder = "mnist"

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        if root is None:
            root = os.path.join(dataset._default_data_dir(), "datasets", self._folder)
        super(MNIST, self).__init__(root, transform)

    def _get_data(self):
        data_name, label_name = self._train_files if self._train else self._test_files
        label_file = _open_maybe_gz(self._root, label_name)
        data_file = _open_maybe_gz(self._root, data_name)
        if label_file is None or data_file is None:
            for f in (label_file, data_file):
                if f is not None:
                    f.close()
            raise _missing(type(self).__name__, self._root, [data_name, label_name])
        with label_file:
            magic, count = struct.unpack(">II", label_file.read(8))
            if magic != 2049:
                raise ValueError("%s: %s is not an idx1 label file (magic %d)"
                                 % (type(self).__name__, label_name, magic))
            label = np.frombuffer(label_file.read(), dtype=np.uint8).astype(np.int32)
        with data_file:
            magic, n, rows, cols = struct.unpack(">IIII", data_file.read(16))
            if magic != 2051:
                raise ValueError("%s: %s is not an idx3 image file (magic %d)"
                                 % (type(self).__name__, data_name, magic))
            data = np.frombuffer(data_file.read(), dtype=np.uint8)
        if n != len(label) or count != len(label) or data.size != n * rows * cols:
            raise ValueError("%s: %s and %s disagree on the number of samples"
                             % (type(self).__name__, data_name, label_name))
        data = data.reshape(n, rows, cols, 1)
        self._data = nd.array(data, dtype=data.dtype)
        self._label = label


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST, MNIST's file format and shapes; default root
    $MXNET_HOME/datasets/fashion-mnist."""

    _folder = "fashion-mnist"


class CIFAR10(dataset._DownloadedDataset):
    """CIFAR-10: samples are (uint8 NDArray (32, 32, 3), int32 label).

    root: folder with the binary batches data_batch_1.bin ... data_batch_5.bin and
        test_batch.bin (also found in root/cifar-10-batches-bin, or unpacked from
        root/cifar-10-binary.tar.gz); default $MXNET_HOME/datasets/cifar10.
    train: the training set (True) or the test set.
    transform: fn(data, label) -> sample, applied on every read.
    """

    _archive = "cifar-10-binary.tar.gz"
    _subdir = "cifar-10-batches-bin"
    _train_files = ["data_batch_%d.bin" % i for i in range(1, 6)]
    _test_files = ["test_batch.bin"]
    _folder = "cifar10"
    _label_bytes = 1

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        if root is None:
            root = os.path.join(dataset._default_data_dir(), "datasets", self._folder)
        super(CIFAR10, self).__init__(root, transform)

    def _label_column(self):
        return 0

    def _read_batch(self, filename):
        with open(filename, "rb") as fin:
            raw = np.frombuffer(fin.read(), dtype=np.uint8)
        width = 3072 + self._label_bytes
        if raw.size % width:
            raise ValueError("%s: %s is not a CIFAR binary batch (size %d is not a multiple "
                             "of %d)" % (type(self).__name__, filename, raw.size, width))
        raw = raw.reshape(-1, width)
        images = raw[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return images, raw[:, self._label_column()].astype(np.int32)

    def _find(self, names):
        """The folder holding all of `names`, unpacking the local archive if needed."""
        candidates = [self._root, os.path.join(self._root, self._subdir)]
        for folder in candidates:
            if all(os.path.isfile(os.path.join(folder, n)) for n in names):
                return folder
        archive = os.path.join(self._root, self._archive)
        if os.path.isfile(archive):
            with tarfile.open(archive) as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(self._root, filter="data")
                else:  # Pythons without extraction filters
                    tar.extractall(self._root)
            for folder in candidates:
                if all(os.path.isfile(os.path.join(folder, n)) for n in names):
                    return folder
        raise _missing(type(self).__name__, self._root, names)

    def _get_data(self):
        names = self._train_files if self._train else self._test_files
        folder = self._find(names)
        parts = [self._read_batch(os.path.join(folder, n)) for n in names]
        data = np.concatenate([p[0] for p in parts])
        label = np.concatenate([p[1] for p in parts])
        self._data = nd.array(data, dtype=data.dtype)
        self._label = label


class CIFAR100(CIFAR10):
    """CIFAR-100: samples are (uint8 NDArray (32, 32, 3), int32 label); fine_label picks the
    100 fine classes instead of the 20 coarse ones. root holds train.bin and test.bin (or
    root/cifar-100-binary, or root/cifar-100-binary.tar.gz); default
    $MXNET_HOME/datasets/cifar100."""

    _archive = "cifar-100-binary.tar.gz"
    _subdir = "cifar-100-binary"
    _train_files = ["train.bin"]
    _test_files = ["test.bin"]
    _folder = "cifar100"
    _label_bytes = 2

    def __init__(self, root=None, fine_label=False, train=True, transform=None):
        self._fine_label = fine_label
        super(CIFAR100, self).__init__(root, train, transform)

    def _label_column(self):
        return 1 if self._fine_label else 0


class ImageRecordDataset(dataset.RecordFileDataset):
    """Images packed in a RecordIO file (im2rec's output): samples are (decoded uint8
    NDArray (H, W, C), label from the record header).

    flag: 1 decodes to 3 channels (RGB), 0 to one gray channel.
    transform: fn(data, label) -> sample, applied on every read.
    """

    def __init__(self, filename, flag=1, transform=None):
        super(ImageRecordDataset, self).__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        record = super(ImageRecordDataset, self).__getitem__(idx)
        header, img = recordio.unpack(record)
        decoded = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(decoded, header.label)
        return decoded, header.label


class ImageFolderDataset(dataset.Dataset):
    """Image files in one sub-folder per class (root/car/0001.jpg, root/bus/023.png, ...).

    Classes are the sub-folders in sorted order (`synsets[label]` is a label's folder name);
    `items` lists (filename, label). Files other than .jpg, .jpeg and .png are skipped with a
    warning, as are plain files directly in root.
    flag: 1 decodes to 3 channels (RGB), 0 to one gray channel.
    transform: fn(data, label) -> sample, applied on every read.
    """

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        if not os.path.isdir(self._root):
            raise FileNotFoundError("ImageFolderDataset: %s is not a folder" % self._root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root):
        self.synsets = []
        self.items = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn("Ignoring %s, which is not a directory." % path, stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn("Ignoring %s of type %s. Only support %s"
                                  % (filename, ext, ", ".join(self._exts)))
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        filename, label = self.items[idx]
        img = image.imread(filename, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)
