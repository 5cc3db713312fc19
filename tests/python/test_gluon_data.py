"""mx.gluon.data: samplers, datasets and their views, the DataLoader, the vision datasets read
from local files, and the vision transforms (against numpy and mx.image)."""
import gzip
import os
import struct

import numpy as np
import pytest

import nanomx as mx
from nanomx import gluon, recordio
from nanomx.gluon import data as gdata
from nanomx.gluon.data.vision import transforms as T


@pytest.fixture(autouse=True)
def _drain_engine():
    yield
    mx.nd.waitall()


def _np(x):
    return x.asnumpy() if isinstance(x, mx.nd.NDArray) else np.asarray(x)


# ---- samplers -------------------------------------------------------------------------------
def test_sequential_and_random_sampler():
    assert list(gdata.SequentialSampler(4)) == [0, 1, 2, 3]
    assert list(gdata.SequentialSampler(3, start=5)) == [5, 6, 7]
    assert len(gdata.SequentialSampler(3, 5)) == 3
    np.random.seed(3)
    order = list(gdata.RandomSampler(20))
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert len(gdata.RandomSampler(20)) == 20
    with pytest.raises(ValueError):
        gdata.SequentialSampler(-1)


@pytest.mark.parametrize("last_batch, expected", [
    ("keep", [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]),
    ("discard", [[0, 1, 2], [3, 4, 5], [6, 7, 8]]),
])
def test_batch_sampler_keep_discard(last_batch, expected):
    sampler = gdata.BatchSampler(gdata.SequentialSampler(10), 3, last_batch)
    assert list(sampler) == expected
    assert len(sampler) == len(expected)


def test_batch_sampler_rollover_carries_the_rest_to_the_next_pass():
    sampler = gdata.BatchSampler(gdata.SequentialSampler(10), 3, "rollover")
    assert len(sampler) == 3
    assert list(sampler) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(sampler) == 3  # (1 held back + 10) // 3
    assert list(sampler) == [[9, 0, 1], [2, 3, 4], [5, 6, 7]]
    assert list(sampler)[0] == [8, 9, 0]


def test_batch_sampler_bad_arguments():
    with pytest.raises(ValueError, match="last_batch must be one of"):
        gdata.BatchSampler(gdata.SequentialSampler(4), 2, "drop")
    with pytest.raises(ValueError, match="batch_size"):
        gdata.BatchSampler(gdata.SequentialSampler(4), 0)


def test_filter_sampler():
    sampler = gdata.FilterSampler(lambda x: x % 3 == 0, list(range(10)))
    assert list(sampler) == [0, 3, 6, 9] and len(sampler) == 4


# ---- datasets -------------------------------------------------------------------------------
def test_simple_and_array_dataset():
    ds = gdata.SimpleDataset([10, 11, 12])
    assert len(ds) == 3 and ds[1] == 11
    x = np.arange(12).reshape(6, 2)
    y = mx.nd.arange(6)
    ads = gdata.ArrayDataset(x, y)
    assert len(ads) == 6
    a, b = ads[2]
    np.testing.assert_array_equal(a, [4, 5])
    # A 1-D NDArray is held as numpy: its samples are scalars.
    assert isinstance(b, np.generic) and b == 2
    single = gdata.ArrayDataset(mx.nd.ones((3, 2)))
    assert single[0].shape == (2,)
    with pytest.raises(AssertionError, match="same length"):
        gdata.ArrayDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(AssertionError):
        gdata.ArrayDataset()


def test_transform_lazy_and_eager():
    calls = []

    def double(x, y):
        calls.append(x)
        return x * 2, y

    ds = gdata.ArrayDataset(list(range(4)), list("abcd"))
    lazy = ds.transform(double)
    assert calls == []
    assert lazy[1] == (2, "b") and calls == [1]
    eager = ds.transform(double, lazy=False)
    assert len(calls) == 5 and isinstance(eager, gdata.SimpleDataset)
    assert eager[3] == (6, "d")
    first = ds.transform_first(lambda x: x + 100)
    assert first[0] == (100, "a")
    plain = gdata.SimpleDataset([1, 2]).transform_first(lambda x: -x)
    assert plain[1] == -2


def test_filter_shard_take_sample():
    ds = gdata.SimpleDataset(list(range(10)))
    even = ds.filter(lambda x: x % 2 == 0)
    assert [even[i] for i in range(len(even))] == [0, 2, 4, 6, 8]
    shards = [ds.shard(3, i) for i in range(3)]
    assert [len(s) for s in shards] == [4, 3, 3]
    assert [s[i] for s in shards for i in range(len(s))] == list(range(10))
    assert len(ds.take(3)) == 3 and ds.take(3)[2] == 2
    assert len(ds.take(None)) == 10 and len(ds.take(100)) == 10
    sampled = ds.sample(gdata.SequentialSampler(3, start=4))
    assert [sampled[i] for i in range(3)] == [4, 5, 6]
    with pytest.raises(TypeError, match="Invalid sampler"):
        ds.sample([1, 2])
    with pytest.raises(AssertionError):
        ds.shard(3, 3)


def _write_rec(tmp_path, images, labels):
    rec, idx = str(tmp_path / "data.rec"), str(tmp_path / "data.idx")
    writer = recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, (img, label) in enumerate(zip(images, labels)):
        header = recordio.IRHeader(0, label, i, 0)
        writer.write_idx(i, recordio.pack_img(header, img[:, :, ::-1], img_fmt=".png"))
    writer.close()
    return rec


def test_record_file_and_image_record_dataset(tmp_path):
    rng = np.random.RandomState(0)
    images = [rng.randint(0, 256, (5 + i, 7, 3)).astype(np.uint8) for i in range(3)]
    rec = _write_rec(tmp_path, images, [1.0, 2.0, 3.0])
    raw = gdata.RecordFileDataset(rec)
    assert len(raw) == 3 and isinstance(raw[0], bytes)
    ds = gdata.vision.ImageRecordDataset(rec)
    img, label = ds[2]
    assert label == 3.0
    np.testing.assert_array_equal(img.asnumpy(), images[2])  # PNG: lossless, decoded RGB
    gray = gdata.vision.ImageRecordDataset(rec, flag=0)
    assert gray[0][0].shape == (5, 7, 1)
    tds = gdata.vision.ImageRecordDataset(rec, transform=lambda d, l: (d.shape, l * 2))
    assert tds[1] == ((6, 7, 3), 4.0)
    with pytest.raises(FileNotFoundError):
        gdata.RecordFileDataset(str(tmp_path / "missing.rec"))


def test_image_folder_dataset(tmp_path):
    rng = np.random.RandomState(1)
    expected = []
    for label, cls in enumerate(["bus", "car"]):
        os.makedirs(str(tmp_path / cls))
        for j in range(2):
            img = rng.randint(0, 256, (4, 6, 3)).astype(np.uint8)
            png = recordio.unpack(recordio.pack_img((0, 0, 0, 0), img[:, :, ::-1],
                                                    img_fmt=".png"))[1]
            with open(str(tmp_path / cls / ("%d.png" % j)), "wb") as f:
                f.write(png)
            expected.append((img, label))
    with open(str(tmp_path / "car" / "notes.txt"), "w") as f:
        f.write("not an image")
    with pytest.warns(UserWarning, match="Ignoring"):
        ds = gdata.vision.ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["bus", "car"] and len(ds) == 4
    for i, (img, label) in enumerate(expected):
        got, got_label = ds[i]
        assert got_label == label
        np.testing.assert_array_equal(got.asnumpy(), img)


def _write_idx(path, magic_dims, payload):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">" + "I" * len(magic_dims), *magic_dims))
        f.write(payload.tobytes())


def test_mnist_from_local_files(tmp_path):
    rng = np.random.RandomState(2)
    images = rng.randint(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 10, 5).astype(np.uint8)
    _write_idx(str(tmp_path / "t10k-images-idx3-ubyte.gz"), (2051, 5, 28, 28), images)
    _write_idx(str(tmp_path / "t10k-labels-idx1-ubyte.gz"), (2049, 5), labels)
    ds = gdata.vision.MNIST(root=str(tmp_path), train=False)
    assert len(ds) == 5
    img, label = ds[3]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy()[:, :, 0], images[3])
    assert label == labels[3] and np.asarray(label).dtype == np.int32
    fashion = gdata.vision.FashionMNIST(root=str(tmp_path), train=False,
                                        transform=lambda d, l: (d.astype("float32") / 255, l))
    assert fashion[0][0].dtype == np.float32
    with pytest.raises(mx.MXNetError, match="does not download"):
        gdata.vision.MNIST(root=str(tmp_path), train=True)


def test_cifar_from_local_files(tmp_path):
    rng = np.random.RandomState(3)
    rows = rng.randint(0, 256, (4, 3073)).astype(np.uint8)
    rows[:, 0] = [3, 1, 4, 1]
    for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
        rows.tofile(str(tmp_path / name))
    train = gdata.vision.CIFAR10(root=str(tmp_path))
    assert len(train) == 20
    img, label = train[6]  # second batch file, row 2
    assert img.shape == (32, 32, 3) and label == 4
    np.testing.assert_array_equal(img.asnumpy(),
                                  rows[2, 1:].reshape(3, 32, 32).transpose(1, 2, 0))
    assert len(gdata.vision.CIFAR10(root=str(tmp_path), train=False)) == 4

    rows100 = rng.randint(0, 100, (3, 3074)).astype(np.uint8)
    folder = tmp_path / "c100"
    os.makedirs(str(folder / "cifar-100-binary"))
    rows100.tofile(str(folder / "cifar-100-binary" / "test.bin"))
    coarse = gdata.vision.CIFAR100(root=str(folder), train=False)
    fine = gdata.vision.CIFAR100(root=str(folder), fine_label=True, train=False)
    assert coarse[1][1] == rows100[1, 0] and fine[1][1] == rows100[1, 1]
    with pytest.raises(mx.MXNetError, match="train.bin"):
        gdata.vision.CIFAR100(root=str(folder), train=True)


# ---- DataLoader -----------------------------------------------------------------------------
def test_dataloader_batches_tuples_into_ndarrays():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10, dtype=np.int32)
    loader = gdata.DataLoader(gdata.ArrayDataset(x, y), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert [b[0].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert batches[0][1].dtype == np.int32
    np.testing.assert_array_equal(np.concatenate([_np(b[0]) for b in batches]), x)
    nd_loader = gdata.DataLoader(mx.nd.array(x), batch_size=5, last_batch="discard")
    assert [b.shape for b in nd_loader] == [(5, 2), (5, 2)]


def test_dataloader_last_batch_and_shuffle():
    ds = gdata.SimpleDataset(list(range(10)))
    assert [len(b) for b in gdata.DataLoader(ds, 3, last_batch="discard")] == [3, 3, 3]
    loader = gdata.DataLoader(ds, 3, last_batch="rollover")
    assert len(list(loader)) == 3 and _np(list(loader)[0]).tolist() == [9, 0, 1]
    np.random.seed(0)
    seen = np.concatenate([_np(b) for b in gdata.DataLoader(ds, 4, shuffle=True)])
    assert sorted(seen.tolist()) == list(range(10)) and seen.tolist() != list(range(10))


def test_dataloader_argument_errors():
    ds = gdata.SimpleDataset(list(range(4)))
    with pytest.raises(ValueError, match="batch_size must be specified"):
        gdata.DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle must not be specified"):
        gdata.DataLoader(ds, 2, shuffle=True, sampler=gdata.SequentialSampler(4))
    bs = gdata.BatchSampler(gdata.SequentialSampler(4), 2)
    with pytest.raises(ValueError, match="must not be specified if batch_sampler"):
        gdata.DataLoader(ds, batch_size=2, batch_sampler=bs)
    assert [_np(b).tolist() for b in gdata.DataLoader(ds, batch_sampler=bs)] == [[0, 1], [2, 3]]


def test_dataloader_custom_batchify_and_sampler():
    ds = gdata.SimpleDataset(list(range(6)))
    loader = gdata.DataLoader(ds, batch_size=2, sampler=gdata.SequentialSampler(4, start=2),
                              batchify_fn=lambda samples: sum(samples))
    assert list(loader) == [5, 9]


@pytest.mark.parametrize("thread_pool", [False, True])
def test_dataloader_workers_match_single_thread(thread_pool):
    x = np.random.RandomState(4).rand(23, 3).astype(np.float32)
    ds = gdata.ArrayDataset(x, np.arange(23)).transform_first(lambda d: d * 2)
    ref = [[_np(f) for f in b] for b in gdata.DataLoader(ds, batch_size=5)]
    loader = gdata.DataLoader(ds, batch_size=5, num_workers=3, thread_pool=thread_pool,
                              prefetch=2)
    for _ in range(2):  # two epochs of the same loader
        got = [[_np(f) for f in b] for b in loader]
        assert len(got) == len(ref) == 5
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g[0], r[0])
            np.testing.assert_array_equal(g[1], r[1])


def test_dataloader_pin_memory_and_auto_reload():
    ds = gdata.SimpleDataset([mx.nd.ones((2,)) * i for i in range(4)])
    loader = gdata.DataLoader(ds, batch_size=2, pin_memory=True)
    batches = list(loader)
    assert batches[1].context == mx.cpu_pinned(0)
    np.testing.assert_array_equal(batches[1].asnumpy(), [[2, 2], [3, 3]])
    reload = gdata.DataLoader(ds, batch_size=2, num_workers=1, auto_reload=True)
    assert reload._iter is not None  # the first pass is prepared at construction
    assert len(list(reload)) == 2 and reload._iter is not None
    reload.clean()
    assert reload._iter is None and len(list(reload)) == 2


def test_default_batchify_fn():
    out = gdata.default_batchify_fn([(mx.nd.ones((2,)), 1), (mx.nd.zeros((2,)), 2)])
    assert isinstance(out, list) and out[0].shape == (2, 2)
    np.testing.assert_array_equal(out[1].asnumpy(), [1, 2])
    floats = gdata.default_batchify_fn([0.5, 1.5])
    assert floats.dtype == np.float64
    with pytest.raises(TypeError, match="batchify_fn"):
        gdata.default_batchify_fn([object(), object()])


# ---- transforms -----------------------------------------------------------------------------
def _image(h=10, w=14, seed=5):
    return mx.nd.array(np.random.RandomState(seed).randint(0, 256, (h, w, 3)), dtype="uint8")


def test_to_tensor_and_normalize_match_numpy():
    img = _image()
    host = img.asnumpy().astype(np.float32)
    tensor = T.ToTensor()(img)
    assert tensor.dtype == np.float32 and tensor.shape == (3, 10, 14)
    np.testing.assert_allclose(tensor.asnumpy(), host.transpose(2, 0, 1) / 255, rtol=1e-6)
    batch = T.ToTensor()(mx.nd.stack(img, img))
    assert batch.shape == (2, 3, 10, 14)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    ref = (tensor.asnumpy() - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    norm = T.Normalize(mean, std)
    np.testing.assert_allclose(norm(tensor).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norm(batch).asnumpy()[1], ref, rtol=1e-5, atol=1e-6)
    norm.hybridize()
    np.testing.assert_allclose(norm(tensor).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(T.Normalize(0.5, 2.0)(tensor).asnumpy(),
                               (tensor.asnumpy() - 0.5) / 2, rtol=1e-6)
    with pytest.raises(ValueError):
        T.Normalize((0.1, 0.2), (1.0, 1.0, 1.0))


def test_compose_groups_hybrid_runs():
    t = T.Compose([T.Resize(8), T.CenterCrop(6), T.ToTensor(), T.Normalize(0.5, 0.25)])
    assert len(t) == 3 and isinstance(t[2], gluon.nn.HybridSequential)
    out = t(_image())
    assert out.shape == (3, 6, 6) and out.dtype == np.float32
    manual = T.Normalize(0.5, 0.25)(T.ToTensor()(T.CenterCrop(6)(T.Resize(8)(_image()))))
    np.testing.assert_allclose(out.asnumpy(), manual.asnumpy(), rtol=1e-6)


def test_resize_and_crops():
    img = _image(10, 14)
    resized = T.Resize((7, 5))(img)
    np.testing.assert_array_equal(resized.asnumpy(), mx.image.imresize(img, 7, 5).asnumpy())
    assert T.Resize(6)(img).shape == (6, 6, 3)
    assert T.Resize(5, keep_ratio=True)(img).shape == (5, 7, 3)
    assert T.Resize((7, 5))(mx.nd.stack(img, img)).shape == (2, 5, 7, 3)
    assert T.CenterCrop((6, 4))(img).shape == (4, 6, 3)
    np.testing.assert_array_equal(T.CenterCrop((6, 4))(img).asnumpy(),
                                  img.asnumpy()[3:7, 4:10])
    assert T.RandomResizedCrop(5)(img).shape == (5, 5, 3)
    crop = T.CropResize(2, 1, 5, 4)(img)
    np.testing.assert_array_equal(crop.asnumpy(), img.asnumpy()[1:5, 2:7])
    assert T.CropResize(2, 1, 5, 4, size=3)(img).shape == (3, 3, 3)
    with pytest.raises(ValueError, match="does not fit"):
        T.CropResize(10, 0, 5, 4)(img)


def test_random_flips_cast_and_jitters():
    img = _image()
    host = img.asnumpy()
    seen = set()
    for _ in range(20):
        out = T.RandomFlipLeftRight()(img).asnumpy()
        if np.array_equal(out, host):
            seen.add("same")
        else:
            np.testing.assert_array_equal(out, host[:, ::-1])
            seen.add("flipped")
    assert seen == {"same", "flipped"}
    out = T.RandomFlipTopBottom()(img).asnumpy()
    assert np.array_equal(out, host) or np.array_equal(out, host[::-1])
    assert T.Cast("float16")(img).dtype == np.float16
    bright = T.RandomBrightness(0.5)(img.astype("float32")).asnumpy()
    ratio = bright[host > 0] / host[host > 0]
    assert np.allclose(ratio, ratio[0], rtol=1e-4) and 0.5 - 1e-6 <= ratio[0] <= 1.5 + 1e-6
    for jitter in (T.RandomContrast(0.3), T.RandomSaturation(0.3), T.RandomHue(0.1),
                   T.RandomColorJitter(0.1, 0.1, 0.1, 0.1), T.RandomLighting(0.1)):
        out = jitter(img)
        assert out.shape == img.shape and out.dtype == np.uint8
    assert T.RandomApply(T.Cast("float64"), p=0)(img).dtype == np.uint8
    assert T.RandomApply(T.Cast("float64"), p=1)(img).dtype == np.float64
    with pytest.raises(ValueError):
        T.RandomBrightness(-1)


def test_dataset_with_transforms_through_dataloader():
    images = mx.nd.array(np.random.RandomState(6).randint(0, 256, (6, 8, 8, 3)), dtype="uint8")
    ds = gdata.ArrayDataset(images, np.arange(6)).transform_first(
        T.Compose([T.ToTensor(), T.Normalize(0.5, 0.5)]))
    data, label = next(iter(gdata.DataLoader(ds, batch_size=4)))
    assert data.shape == (4, 3, 8, 8) and label.shape == (4,)
    np.testing.assert_allclose(
        data.asnumpy()[1], (images.asnumpy()[1].transpose(2, 0, 1) / 255.0 - 0.5) / 0.5,
        rtol=1e-5, atol=1e-6)
