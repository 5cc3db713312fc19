"""im2rec (python3 -m nanomx.tools.im2rec and the C++ command): MXNet's .lst order and labels,
record order and labels whatever the thread count, skipped files, and no half-written output."""
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import nanomx as mx
from nanomx import recordio

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cwd, *args, check=True):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mx.__file__)))
    return subprocess.run([sys.executable, "-m", "nanomx.tools.im2rec", *args], cwd=str(cwd),
                          env=env, capture_output=True, text=True, timeout=300, check=check)


@pytest.fixture
def images(tmp_path):
    root = tmp_path / "imgs"
    for label, cls in enumerate(["cat", "dog"]):
        (root / cls).mkdir(parents=True)
        for i in range(7):
            bgr = np.full((10 + i, 12, 3), 20 * i + label, np.uint8)
            data = recordio.unpack(recordio.pack_img(recordio.IRHeader(0, 0, 0, 0), bgr,
                                                     img_fmt=".png"))[1]
            (root / cls / ("%s_%d.png" % (cls, i))).write_bytes(data)
    (root / "dog" / "broken.jpg").write_bytes(b"this is not a jpeg")
    (root / "dog" / "notes.txt").write_text("ignored: not an image extension")
    return root


def read_rec(prefix):
    r = recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    out = []
    for key in r.keys:
        h, img = recordio.unpack_img(r.read_idx(key))
        out.append((key, h.id, float(h.label), img.shape))
    return out


def test_list_order_matches_mxnet(tmp_path, images):
    run(tmp_path, "--list", "--recursive", str(tmp_path / "data"), str(images))
    lines = (tmp_path / "data.lst").read_text().splitlines()
    # MXNet's im2rec.py: walk order, then random.seed(100); random.shuffle.
    walk = []
    for label, cls in enumerate(["cat", "dog"]):
        names = sorted(os.listdir(str(images / cls)))
        names = [n for n in names if os.path.splitext(n)[1] in (".png", ".jpg", ".jpeg")]
        walk += [(cls + "/" + n, label) for n in names]
    items = [(i, p, lab) for i, (p, lab) in enumerate(walk)]
    random.seed(100)
    random.shuffle(items)
    assert lines == ["%d\t%f\t%s" % (i, lab, p) for i, p, lab in items]
    run(tmp_path, "--list", "--no-shuffle", "--train-ratio", "0.5", "--test-ratio", "0.25",
        str(tmp_path / "split"), str(images / "cat"))
    sizes = [len((tmp_path / ("split_%s.lst" % s)).read_text().splitlines())
             for s in ("test", "train", "val")]
    assert sizes == [1, 3, 3]


@pytest.mark.parametrize("threads", ["1", "4"])
def test_pack_order_labels_and_skips(tmp_path, images, threads):
    prefix = str(tmp_path / "data")
    run(tmp_path, "--list", "--recursive", prefix, str(images))
    result = run(tmp_path, "--num-thread", threads, "--encoding", ".png", prefix, str(images))
    assert "14 images written, 1 skipped" in result.stdout
    assert result.stderr.count("warning: skipping") == 1 and "broken.jpg" in result.stderr
    entries = [line.split("\t") for line in open(prefix + ".lst").read().splitlines()]
    expected = [(int(e[0]), float(e[1])) for e in entries if not e[2].endswith("broken.jpg")]
    got = read_rec(prefix)
    assert [(k, lab) for k, _, lab, _ in got] == expected
    assert all(k == i for k, i, _, _ in got)
    # The same bytes whatever the thread count.
    (tmp_path / "t1").mkdir()
    other = str(tmp_path / "t1" / "data")
    os.link(prefix + ".lst", other + ".lst")
    run(tmp_path, "--num-thread", "3" if threads == "1" else "1", "--encoding", ".png", other,
        str(images))
    assert open(other + ".rec", "rb").read() == open(prefix + ".rec", "rb").read()


def test_resize_center_crop_pass_through_pack_label(tmp_path, images):
    lst = tmp_path / "p.lst"
    lst.write_text("3\t1\t2\tcat/cat_6.png\n")
    run(tmp_path, "--resize", "8", "--center-crop", "--encoding", ".png", str(tmp_path / "p"),
        str(images))
    (_, _, _, shape), = read_rec(str(tmp_path / "p"))
    assert shape[:2] == (8, 8)
    run(tmp_path, "--pass-through", "--pack-label", str(tmp_path / "p"), str(images))
    r = recordio.MXRecordIO(str(tmp_path / "p.rec"), "r")
    h, payload = recordio.unpack(r.read())
    assert h.flag == 2 and list(h.label) == [1, 2] and h.id == 3
    assert payload == (images / "cat" / "cat_6.png").read_bytes()


def test_cpp_command_and_errors(tmp_path, images):
    exe = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(mx.__file__))),
                       "build", "release", "tools", "im2rec", "im2rec")
    lib = os.environ.get("NANOMX_LIBRARY_PATH")
    if lib:
        exe = os.path.join(os.path.dirname(os.path.dirname(lib)), "tools", "im2rec", "im2rec")
    if not os.path.exists(exe):
        pytest.skip("the C++ im2rec command is not built")
    subprocess.run([exe, "--list", "--recursive", str(tmp_path / "c"), str(images)], check=True,
                   capture_output=True)
    assert len((tmp_path / "c.lst").read_text().splitlines()) == 15
    bad = run(tmp_path, "--color", "7", "x", str(images), check=False)
    assert bad.returncode == 2 and "--color" in bad.stderr
    missing = run(tmp_path, str(tmp_path / "nolist"), str(images), check=False)
    assert missing.returncode == 1 and "Did not find" in missing.stdout
    (tmp_path / "m.lst").write_text("0\t1\tcat/cat_0.png\nnot a line\n")
    (tmp_path / "m.rec").write_bytes(b"old")
    failed = run(tmp_path, str(tmp_path / "m"), str(images), check=False)
    assert failed.returncode == 1 and "m.lst' line 2" in failed.stderr
    assert (tmp_path / "m.rec").read_bytes() == b"old"  # not overwritten half-way
