"""mx.img / mx.io image pipeline: ImageIter's batches, labels, last-batch handling, shuffling,
partitions, threads, the augmenters against references computed here, corrupt input and the
profile's stage events."""
import random

import numpy as np
import pytest

import nanomx as mx
from nanomx import recordio


def make_image(i, h=8, w=8):
    """A distinct lossless test image (BGR for pack_img), and its RGB view."""
    y, x = np.mgrid[0:h, 0:w]
    bgr = np.stack([(x * 7 + i * 13) % 256, (y * 11 + i * 5) % 256, (x + y + i * 29) % 256],
                   axis=2).astype(np.uint8)
    return bgr, bgr[:, :, ::-1]


def write_rec(tmp_path, n, h=8, w=8, name="set", multi=False, fmt=".png"):
    rec, idx = str(tmp_path / (name + ".rec")), str(tmp_path / (name + ".idx"))
    writer = recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(n):
        bgr, _ = make_image(i, h, w)
        label = [i, 100 + i] if multi else float(i)
        writer.write_idx(i, recordio.pack_img(recordio.IRHeader(0, label, i, 0), bgr,
                                              quality=9 if fmt == ".png" else 95, img_fmt=fmt))
    writer.close()
    return rec, idx


def labels_of(it):
    out = []
    for batch in it:
        out.append((batch.label[0].asnumpy().tolist(), batch.pad))
    return out


def test_batches_data_and_labels(tmp_path):
    rec, _ = write_rec(tmp_path, 10)
    it = mx.img.ImageIter(batch_size=4, data_shape=(3, 8, 8), path_imgrec=rec)
    assert it.provide_data[0].name == "data" and it.provide_data[0].shape == (4, 3, 8, 8)
    assert it.provide_label[0].name == "softmax_label" and it.provide_label[0].shape == (4,)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    data = np.concatenate([b.data[0].asnumpy() for b in batches])
    labels = np.concatenate([b.label[0].asnumpy() for b in batches])
    assert data.dtype == np.float32 and data.shape == (12, 3, 8, 8)
    order = list(range(10)) + [0, 1]
    np.testing.assert_array_equal(labels, order)
    for k, i in enumerate(order):
        np.testing.assert_array_equal(data[k], make_image(i)[1].transpose(2, 0, 1))
    with pytest.raises(StopIteration):
        it.next()
    it.reset()
    assert it.next().label[0].asnumpy().tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("python_path", [False, True])
def test_last_batch_handle(tmp_path, python_path):
    rec, idx = write_rec(tmp_path, 10)
    kw = {"aug_list": []} if python_path else {}

    def make(handle):
        return mx.img.ImageIter(batch_size=4, data_shape=(3, 8, 8), path_imgrec=rec,
                                path_imgidx=idx, last_batch_handle=handle, **kw)
    assert labels_of(make("pad")) == [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0), ([8, 9, 0, 1], 2)]
    assert labels_of(make("discard")) == [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0)]
    it = make("roll_over")
    assert labels_of(it) == [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0)]
    it.reset()
    assert labels_of(it) == [([8, 9, 0, 1], 0), ([2, 3, 4, 5], 0), ([6, 7, 8, 9], 0)]
    it.reset()
    assert labels_of(it)[0] == ([0, 1, 2, 3], 0)


def test_multi_label_and_label_width(tmp_path):
    rec, _ = write_rec(tmp_path, 3, multi=True)
    it = mx.img.ImageIter(batch_size=3, data_shape=(3, 8, 8), path_imgrec=rec, label_width=2)
    assert it.provide_label[0].shape == (3, 2)
    np.testing.assert_array_equal(it.next().label[0].asnumpy(),
                                  [[0, 100], [1, 101], [2, 102]])
    bad = mx.img.ImageIter(batch_size=3, data_shape=(3, 8, 8), path_imgrec=rec)
    with pytest.raises(mx.MXNetError, match="2 label"):
        bad.next()


def test_shuffle_follows_mx_random_seed(tmp_path):
    rec, idx = write_rec(tmp_path, 20)

    def epoch_labels(seed):
        mx.random.seed(seed)
        it = mx.img.ImageIter(batch_size=5, data_shape=(3, 8, 8), path_imgrec=rec,
                              path_imgidx=idx, shuffle=True)
        first = [lab for b in it for lab in b.label[0].asnumpy().tolist()]
        it.reset()
        second = [lab for b in it for lab in b.label[0].asnumpy().tolist()]
        return first, second
    a1, a2 = epoch_labels(3)
    b1, b2 = epoch_labels(3)
    c1, _ = epoch_labels(4)
    assert (a1, a2) == (b1, b2)
    assert sorted(a1) == list(range(20)) and sorted(a2) == list(range(20))
    assert a1 != a2 and a1 != c1 and a1 != list(range(20))


def test_parts_cover_the_set_once(tmp_path):
    rec, idx = write_rec(tmp_path, 11)
    seen = []
    for part in range(3):
        it = mx.img.ImageIter(batch_size=1, data_shape=(3, 8, 8), path_imgrec=rec,
                              path_imgidx=idx, part_index=part, num_parts=3)
        seen += [b.label[0].asnumpy()[0] for b in it]
    assert sorted(seen) == list(range(11))


def test_same_output_whatever_the_thread_count(tmp_path, monkeypatch):
    rec, _ = write_rec(tmp_path, 12, h=20, w=30)

    def run(threads):
        monkeypatch.setenv("NANOMX_CPU_WORKER_NTHREADS", str(threads))
        mx.random.seed(7)
        it = mx.img.ImageIter(batch_size=6, data_shape=(3, 10, 12), path_imgrec=rec,
                              rand_crop=True, rand_resize=True, rand_mirror=True, brightness=0.3)
        return np.concatenate([b.data[0].asnumpy() for b in it])
    np.testing.assert_array_equal(run(1), run(3))


def test_imglist_and_path_root(tmp_path):
    for i in range(3):
        bgr, _ = make_image(i)
        with open(str(tmp_path / ("i%d.png" % i)), "wb") as f:
            f.write(recordio.unpack(recordio.pack_img(recordio.IRHeader(0, 0, 0, 0), bgr,
                                                      img_fmt=".png"))[1])
    imglist = [[5.0, "i0.png"], [6.0, "i1.png"], [7.0, "i2.png"]]
    it = mx.img.ImageIter(batch_size=3, data_shape=(3, 8, 8), imglist=imglist,
                          path_root=str(tmp_path))
    b = it.next()
    assert b.label[0].asnumpy().tolist() == [5, 6, 7]
    np.testing.assert_array_equal(b.data[0].asnumpy()[2], make_image(2)[1].transpose(2, 0, 1))
    lst = str(tmp_path / "l.lst")
    with open(lst, "w") as f:
        f.write("0\t1.5\ti1.png\n1\t2.5\ti0.png\n")
    it = mx.img.ImageIter(batch_size=2, data_shape=(3, 8, 8), path_imglist=lst,
                          path_root=str(tmp_path))
    assert it.next().label[0].asnumpy().tolist() == [1.5, 2.5]
    with open(lst, "w") as f:
        f.write("0\t1.5\ti1.png\nbroken line\n")
    with pytest.raises(mx.MXNetError, match="l.lst' line 2"):
        mx.img.ImageIter(batch_size=2, data_shape=(3, 8, 8), path_imglist=lst)


def test_constructor_errors(tmp_path):
    rec, _ = write_rec(tmp_path, 2)
    with pytest.raises(ValueError):
        mx.img.ImageIter(batch_size=2, data_shape=(1, 8, 8), path_imgrec=rec)
    with pytest.raises(ValueError):
        mx.img.ImageIter(batch_size=2, data_shape=(3, 8, 8), path_imgrec=rec,
                         last_batch_handle="keep")
    with pytest.raises(TypeError, match="bogus"):
        mx.img.ImageIter(batch_size=2, data_shape=(3, 8, 8), path_imgrec=rec, bogus=1)


def test_corrupt_inputs(tmp_path):
    rec = str(tmp_path / "bad.rec")
    w = recordio.MXRecordIO(rec, "w")
    w.write(recordio.pack(recordio.IRHeader(0, 1, 0, 0), b"not an image"))
    w.close()
    it = mx.img.ImageIter(batch_size=1, data_shape=(3, 8, 8), path_imgrec=rec)
    with pytest.raises(mx.MXNetError, match="byte offset 0 of .*bad.rec"):
        it.next()
    good, _ = write_rec(tmp_path, 3)
    data = open(good, "rb").read()
    cut = str(tmp_path / "cut.rec")
    open(cut, "wb").write(data[:-7])
    with pytest.raises(mx.MXNetError, match="cut.rec.*truncated"):
        mx.img.ImageIter(batch_size=1, data_shape=(3, 8, 8), path_imgrec=cut)


# ---- augmenters (Python classes) against numpy references --------------------------------

def _img(h=12, w=16):
    return mx.nd.array(make_image(3, h, w)[1], dtype=np.uint8)


def test_crop_augmenters():
    src = _img()
    a = src.asnumpy()
    out = mx.img.CenterCropAug((8, 6))(src).asnumpy()
    np.testing.assert_array_equal(out, a[3:9, 4:12])
    random.seed(5)
    out = mx.img.RandomCropAug((8, 6))(src).asnumpy()
    random.seed(5)
    x0, y0 = random.randint(0, 8), random.randint(0, 6)
    np.testing.assert_array_equal(out, a[y0:y0 + 6, x0:x0 + 8])
    out, rect = mx.img.fixed_crop(src, 1, 2, 5, 4), None
    np.testing.assert_array_equal(out.asnumpy(), a[2:6, 1:6])
    random.seed(9)
    out = mx.img.RandomSizedCropAug((4, 4), 0.08, (0.75, 1.333), 0)(src).asnumpy()
    random.seed(9)
    for _ in range(10):
        target = random.uniform(0.08, 1.0) * 12 * 16
        ratio = np.exp(random.uniform(np.log(0.75), np.log(1.333)))
        nw, nh = int(round(np.sqrt(target * ratio))), int(round(np.sqrt(target / ratio)))
        if nw <= 16 and nh <= 12:
            x0, y0 = random.randint(0, 16 - nw), random.randint(0, 12 - nh)
            break
    crop = a[y0:y0 + nh, x0:x0 + nw]
    # OpenCV's nearest neighbour: source index floor(d * src / dst).
    ys = (np.arange(4) * nh / 4.0).astype(int)
    xs = (np.arange(4) * nw / 4.0).astype(int)
    np.testing.assert_array_equal(out, crop[ys][:, xs])


def test_resize_augmenters():
    src = _img(12, 16)
    a = src.asnumpy()
    out = mx.img.ResizeAug(6, 0)(src).asnumpy()
    assert out.shape == (6, 8, 3)
    np.testing.assert_array_equal(out, a[::2, ::2])
    out = mx.img.ForceResizeAug((4, 3), 0)(src).asnumpy()
    np.testing.assert_array_equal(out, a[::4, ::4])
    assert mx.img.imresize(src, 5, 7).shape == (7, 5, 3)


def test_colour_augmenters():
    src = _img().astype("float32")
    a = src.asnumpy()
    coef = np.array([[[0.299, 0.587, 0.114]]])
    np.testing.assert_array_equal(mx.img.HorizontalFlipAug(1.0)(src).asnumpy(), a[:, ::-1])
    np.testing.assert_array_equal(mx.img.HorizontalFlipAug(0.0)(src).asnumpy(), a)
    assert mx.img.CastAug()(_img()).dtype == np.float32
    random.seed(1)
    out = mx.img.BrightnessJitterAug(0.5)(src).asnumpy()
    random.seed(1)
    np.testing.assert_allclose(out, a * (1 + random.uniform(-0.5, 0.5)), rtol=1e-6)
    random.seed(2)
    out = mx.img.ContrastJitterAug(0.5)(src).asnumpy()
    random.seed(2)
    alpha = 1 + random.uniform(-0.5, 0.5)
    gray = a * coef
    ref = a * alpha + (3.0 * (1.0 - alpha) / gray.size) * gray.sum()
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    random.seed(3)
    out = mx.img.SaturationJitterAug(0.5)(src).asnumpy()
    random.seed(3)
    alpha = 1 + random.uniform(-0.5, 0.5)
    ref = a * alpha + (a * coef).sum(axis=2, keepdims=True) * (1 - alpha)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    random.seed(4)
    out = mx.img.HueJitterAug(0.3)(src).asnumpy()
    random.seed(4)
    h = random.uniform(-0.3, 0.3)
    u, w = np.cos(h * np.pi), np.sin(h * np.pi)
    tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])
    t = np.dot(np.dot(ityiq, np.array([[1, 0, 0], [0, u, -w], [0, w, u]])), tyiq).T
    np.testing.assert_allclose(out, np.dot(a, t), rtol=1e-4, atol=1e-3)
    out = mx.img.RandomGrayAug(1.0)(src).asnumpy()
    mat = np.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])
    np.testing.assert_allclose(out, np.dot(a, mat), rtol=1e-5)
    np.random.seed(5)
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                       [-0.5836, -0.6948, 0.4203]])
    out = mx.img.LightingAug(0.1, eigval, eigvec)(src).asnumpy()
    np.random.seed(5)
    ref = a + np.dot(eigvec * np.random.normal(0, 0.1, size=(3,)), eigval)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    mean, std = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 8.0])
    out = mx.img.ColorNormalizeAug(mean, std)(src).asnumpy()
    np.testing.assert_allclose(out, (a - mean) / std, rtol=1e-6)


def test_create_augmenter_order():
    augs = mx.img.CreateAugmenter((3, 224, 224), resize=256, rand_crop=True, rand_resize=True,
                                  rand_mirror=True, mean=True, std=True, brightness=0.1,
                                  hue=0.1, pca_noise=0.1, rand_gray=0.2)
    names = [type(a).__name__ for a in augs]
    assert names == ["ResizeAug", "RandomSizedCropAug", "HorizontalFlipAug", "CastAug",
                     "ColorJitterAug", "HueJitterAug", "LightingAug", "RandomGrayAug",
                     "ColorNormalizeAug"]
    assert [type(a).__name__ for a in mx.img.CreateAugmenter((3, 8, 8))] == \
        ["CenterCropAug", "CastAug"]


# ---- the C++ pipeline's augmentation against references -----------------------------------

def _pipeline(tmp_path, n=4, h=12, w=16, shape=(3, 6, 8), **kw):
    rec, _ = write_rec(tmp_path, n, h, w)
    it = mx.img.ImageIter(batch_size=n, data_shape=shape, path_imgrec=rec, **kw)
    return it.next().data[0].asnumpy()


def test_pipeline_center_crop_and_normalize(tmp_path):
    mean, std = np.array([10.0, 20.0, 30.0]), np.array([2.0, 4.0, 5.0])
    out = _pipeline(tmp_path, mean=mean, std=std)
    for i in range(4):
        rgb = make_image(i, 12, 16)[1][3:9, 4:12].astype(np.float32)
        np.testing.assert_allclose(out[i], ((rgb - mean) / std).transpose(2, 0, 1), rtol=1e-6)


def test_pipeline_resize_matches_imresize(tmp_path):
    out = _pipeline(tmp_path, h=12, w=16, shape=(3, 6, 6), resize=6, inter_method=1)
    for i in range(4):
        ref = mx.img.resize_short(mx.nd.array(make_image(i, 12, 16)[1], dtype=np.uint8), 6, 1)
        np.testing.assert_array_equal(out[i], ref.asnumpy()[:, 1:7].transpose(2, 0, 1))


def test_pipeline_mirror_and_jitter(tmp_path):
    out = _pipeline(tmp_path, n=8, rand_mirror=True)
    flipped = 0
    for i in range(8):
        ref = make_image(i, 12, 16)[1][3:9, 4:12].transpose(2, 0, 1).astype(np.float32)
        if np.array_equal(out[i], ref[:, :, ::-1]):
            flipped += 1
        else:
            np.testing.assert_array_equal(out[i], ref)
    assert 0 < flipped < 8
    out = _pipeline(tmp_path, n=4, brightness=0.4)
    for i in range(4):
        ref = make_image(i, 12, 16)[1][3:9, 4:12].transpose(2, 0, 1).astype(np.float32)
        ratio = out[i][ref > 0] / ref[ref > 0]
        assert 0.6 <= ratio.min() and ratio.max() <= 1.4
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-5)


def test_pipeline_random_sized_crop_shapes(tmp_path):
    out = _pipeline(tmp_path, n=4, h=40, w=50, shape=(3, 16, 16), rand_crop=True,
                    rand_resize=True)
    assert out.shape == (4, 3, 16, 16) and 0 <= out.min() and out.max() <= 255


def test_imdecode_rgb(tmp_path):
    bgr, rgb = make_image(1)
    png = recordio.unpack(recordio.pack_img(recordio.IRHeader(0, 0, 0, 0), bgr,
                                            img_fmt=".png"))[1]
    np.testing.assert_array_equal(mx.img.imdecode(png).asnumpy(), rgb)
    np.testing.assert_array_equal(mx.img.imdecode(png, to_rgb=0).asnumpy(), bgr)
    assert mx.img.imdecode(png, flag=0).shape == (8, 8, 1)
    with pytest.raises(mx.MXNetError, match="not an image"):
        mx.img.imdecode(b"garbage")


# ---- ImageRecordIter ----------------------------------------------------------------------

def test_image_record_iter(tmp_path):
    rec, _ = write_rec(tmp_path, 5, 8, 8)
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2,
                               mean_r=1, mean_g=2, mean_b=3, std_r=2, std_g=2, std_b=2)
    assert it.provide_data[0].shape == (2, 3, 8, 8) and it.batch_size == 2
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 1]
    ref = (make_image(0)[1].astype(np.float32) - [1, 2, 3]) / 2
    np.testing.assert_allclose(batches[0].data[0].asnumpy()[0], ref.transpose(2, 0, 1))
    with pytest.raises(TypeError):
        mx.io.ImageRecordIter(rec)
    with pytest.raises(mx.MXNetError, match="path_imgrec"):
        mx.io.ImageRecordIter(data_shape=(3, 8, 8), batch_size=2)
    # An augmentation nanomx does not implement: accepted at the value that turns it off,
    # refused at any other (never silently dropped); settings that change nothing are accepted.
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2,
                               max_rotate_angle=0, max_random_scale=1.0, verbose=False)
    assert it.provide_data[0].shape == (2, 3, 8, 8)
    with pytest.raises(mx.MXNetError, match="max_rotate_angle=10 is not implemented"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2,
                              max_rotate_angle=10)
    with pytest.raises(mx.MXNetError, match="unknown argument.*no_such_key"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2,
                              no_such_key=1)


# ---- the profile ---------------------------------------------------------------------------

def test_pipeline_stages_in_profile(tmp_path, profile_to, monkeypatch):
    rec, _ = write_rec(tmp_path, 8, 20, 20)
    monkeypatch.setenv("NANOMX_CPU_WORKER_NTHREADS", "2")
    profile_to.start("pipe.json", profile_all=True)
    it = mx.img.ImageIter(batch_size=4, data_shape=(3, 8, 8), path_imgrec=rec, rand_crop=True,
                          rand_mirror=True)
    for _ in it:
        pass
    del it
    events = profile_to.finish()
    names = {e["name"] for e in events if e.get("ph") in ("X", "B")}
    for stage in ("read", "decode", "crop_resize", "flip_color", "normalize_cast", "batchify"):
        assert "ImageRecordIter:" + stage in names
    assert "wait for batch" in names
    decodes = [e for e in events if e.get("name") == "ImageRecordIter:decode"
               and e.get("ph") in ("X", "B")]
    assert len(decodes) == 8
    assert {e["cat"] for e in decodes} == {"operator"}
    names_by_tid = {e["tid"]: e["args"]["name"] for e in events
                    if e.get("ph") == "M" and e.get("name") == "thread_name"}
    assert {names_by_tid.get(e["tid"]) for e in decodes} <= {"io prefetch", "io worker 1"}
    waits = [e for e in events if e.get("name") == "wait for batch" and e.get("ph") in ("X", "B")]
    assert {names_by_tid.get(e["tid"]) for e in waits} == {"main"}


def test_roll_over_carries_only_a_reached_end(tmp_path):
    rec, idx = write_rec(tmp_path, 10)
    it = mx.img.ImageIter(batch_size=4, data_shape=(3, 8, 8), path_imgrec=rec,
                          last_batch_handle="roll_over")
    it.next()
    it.reset()  # mid-epoch: nothing to roll over
    assert labels_of(it) == [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0)]
    it.reset()
    assert labels_of(it)[0] == ([8, 9, 0, 1], 0)
    it.hard_reset()
    assert labels_of(it)[0] == ([0, 1, 2, 3], 0)
