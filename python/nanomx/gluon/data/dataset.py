"""Datasets: indexable collections of samples (MXNet 1.x's gluon.data.dataset).

A dataset is anything with __getitem__ and __len__; the Dataset base class adds the derived
views that MXNet 1.9.1 has: transform / transform_first (lazy by default), filter, shard, take
and sample. Each view keeps a reference to its source and reads it on demand.
"""
import os

from ... import ndarray, recordio

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset(object):
    """The interface of datasets: subclasses define __getitem__ and __len__.

    numpy arrays, NDArrays and lists can be used wherever a dataset is expected."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn):
        """A view of the samples for which `fn(sample)` is true (found once, now)."""
        from .sampler import FilterSampler
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """The `index`-th of `num_shards` contiguous parts; the first len % num_shards parts
        hold one sample more than the others. Shard before shuffling so that every worker of
        a distributed job sees a different part."""
        if num_shards <= 0:
            raise AssertionError("Number of shards must be greater than 0")
        if index < 0:
            raise AssertionError("Index must be non-negative")
        if index >= num_shards:
            raise AssertionError("Shard index of out bound: %d out of %d" % (index, num_shards))
        from .sampler import SequentialSampler
        base, extra = divmod(len(self), num_shards)
        start = base * index + min(index, extra)
        length = base + (1 if index < extra else 0)
        return _SampledDataset(self, SequentialSampler(length, start))

    def take(self, count):
        """A view of the first `count` samples (all of them when count is None or larger)."""
        from .sampler import SequentialSampler
        if count is None or count > len(self):
            count = len(self)
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler):
        """A view of the samples at the indices `sampler` yields (read once, now)."""
        from .sampler import Sampler
        if not isinstance(sampler, Sampler):
            raise TypeError("Invalid sampler type: %s. Expected gluon.data.Sampler instead."
                            % type(sampler))
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy=True):
        """A dataset of fn(sample) (fn(*sample) when the sample is a tuple).

        lazy=True applies fn on every read (needed when fn is random); lazy=False applies it
        to every sample now and keeps the results."""
        if not callable(fn):
            raise TypeError("transform: fn must be callable, got %s" % type(fn).__name__)
        view = _LazyTransformDataset(self, fn)
        if lazy:
            return view
        return SimpleDataset([view[i] for i in range(len(view))])

    def transform_first(self, fn, lazy=True):
        """Like transform, but fn sees and replaces only the first element of each sample
        (the data, leaving the label as it is)."""
        if not callable(fn):
            raise TypeError("transform_first: fn must be callable, got %s" % type(fn).__name__)
        return self.transform(_TransformFirstClosure(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any object with len() and [] (a list, a numpy array, an NDArray)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    """Applies fn to each sample as it is read."""

    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure(object):
    """fn applied to the first element only; a class rather than a closure so that it
    pickles."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    """The samples of `dataset` at the indices a sampler yields (taken once)."""

    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._sampler = sampler
        self._indices = list(iter(sampler))

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """Zips several dataset-like objects of equal length: sample i is (a[i], b[i], ...), or
    a[i] alone for a single one. A 1-D NDArray is held as numpy so that its samples are
    scalars, as in MXNet."""

    def __init__(self, *args):
        if not args:
            raise AssertionError("Needs at least 1 arrays")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise AssertionError(
                    "All arrays must have the same length; array[0] has length %d "
                    "while array[%d] has %d." % (self._length, i + 1, len(data)))
            if isinstance(data, ndarray.NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length


class RecordFileDataset(Dataset):
    """The records of a RecordIO file (`name.rec` with its index `name.idx`), each sample the
    raw bytes of one record."""

    def __init__(self, filename):
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        for path in (self.filename, self.idx_file):
            if not os.path.isfile(path):
                raise FileNotFoundError("RecordFileDataset: %s does not exist" % path)
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)


def _default_data_dir():
    """MXNet's data folder: $MXNET_HOME, else ~/.mxnet."""
    return os.environ.get("MXNET_HOME", os.path.join(os.path.expanduser("~"), ".mxnet"))


class _DownloadedDataset(Dataset):
    """Base of the datasets MXNet downloads (MNIST, CIFAR10, ...): here they are read from
    local files under `root`, and `_get_data` fills `_data` and `_label`."""

    def __init__(self, root, transform):
        super(_DownloadedDataset, self).__init__()
        if transform is not None and not callable(transform):
            raise TypeError("transform must be callable, got %s" % type(transform).__name__)
        self._transform = transform
        self._data = None
        self._label = None
        self._root = os.path.expanduser(root)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError
