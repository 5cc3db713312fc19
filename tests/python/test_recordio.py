"""mx.recordio against RecordIO bytes built here from the published format (dmlc-core's chunk
layout, MXNet's IRHeader 'IfQQ' and the .idx/.lst text formats), not with nanomx's writer."""
import os
import struct

import numpy as np
import pytest

import nanomx as mx
from nanomx import recordio

MAGIC = 0xCED7230A


def chunk(payload, cflag):
    head = struct.pack("<II", MAGIC, (cflag << 29) | len(payload))
    return head + payload + b"\0" * ((4 - len(payload) % 4) % 4)


def encode_record(data):
    """The writer's algorithm, written out: split at aligned magic words, drop them."""
    magic = struct.pack("<I", MAGIC)
    parts, begin = [], 0
    for i in range(0, len(data) // 4 * 4, 4):
        if data[i:i + 4] == magic:
            parts.append(data[begin:i])
            begin = i + 4
    parts.append(data[begin:])
    if len(parts) == 1:
        return chunk(parts[0], 0)
    out = b""
    for k, p in enumerate(parts):
        out += chunk(p, 1 if k == 0 else (3 if k == len(parts) - 1 else 2))
    return out


RECORDS = [b"record_0", b"", b"abc", struct.pack("<I", MAGIC) + b"xyz",
           b"ab12" + struct.pack("<I", MAGIC) + struct.pack("<I", MAGIC) + b"t",
           b"q" * 1001, b"zz" + struct.pack("<I", MAGIC)]


def write_reference(tmp_path):
    """.rec/.idx/.lst made by hand; returns (rec, idx, lst, offsets)."""
    rec, idx, lst = (str(tmp_path / ("ref" + e)) for e in (".rec", ".idx", ".lst"))
    blob, offsets = b"", []
    for r in RECORDS:
        offsets.append(len(blob))
        blob += encode_record(r)
    with open(rec, "wb") as f:
        f.write(blob)
    with open(idx, "w") as f:
        for k, off in enumerate(offsets):
            f.write("%d\t%d\n" % (k * 10, off))
    with open(lst, "w") as f:
        for k in range(len(RECORDS)):
            f.write("%d\t%f\timg_%d.jpg\n" % (k * 10, float(k), k))
    return rec, idx, lst, offsets


def test_reference_bytes_read_back(tmp_path):
    rec, _, _, _ = write_reference(tmp_path)
    r = recordio.MXRecordIO(rec, "r")
    got = []
    while True:
        item = r.read()
        if item is None:
            break
        got.append(item)
    assert got == RECORDS
    r.reset()
    assert r.read() == RECORDS[0]
    r.close()


def test_writer_matches_reference_bytes(tmp_path):
    rec, idx, _, offsets = write_reference(tmp_path)
    out = str(tmp_path / "mine.rec")
    w = recordio.MXIndexedRecordIO(str(tmp_path / "mine.idx"), out, "w")
    for k, r in enumerate(RECORDS):
        w.write_idx(k * 10, r)
    w.close()
    assert open(out, "rb").read() == open(rec, "rb").read()
    assert open(str(tmp_path / "mine.idx")).read() == open(idx).read()


def test_docstring_offsets(tmp_path):
    w = recordio.MXRecordIO(str(tmp_path / "t.rec"), "w")
    tells = []
    for i in range(5):
        tells.append(w.tell())
        w.write(b"record_%d" % i)
    w.close()
    assert tells == [0, 16, 32, 48, 64]


def test_indexed_read(tmp_path):
    rec, idx, _, offsets = write_reference(tmp_path)
    r = recordio.MXIndexedRecordIO(idx, rec, "r")
    assert r.keys == [k * 10 for k in range(len(RECORDS))]
    for k in reversed(range(len(RECORDS))):
        assert r.read_idx(k * 10) == RECORDS[k]
    r.seek(30)
    assert r.tell() == offsets[3]
    with pytest.raises(KeyError):
        r.read_idx(7)


def test_irheader_pack_unpack_bytes():
    s = recordio.pack(recordio.IRHeader(0, 3.5, 7, 0), b"IMG")
    assert s == struct.pack("<IfQQ", 0, 3.5, 7, 0) + b"IMG"
    h, payload = recordio.unpack(s)
    assert (h.flag, h.label, h.id, h.id2, payload) == (0, 3.5, 7, 0, b"IMG")
    m = recordio.pack(recordio.IRHeader(0, [1, 2.5, 3], 9, 0), b"P")
    assert m == struct.pack("<IfQQ", 3, 0.0, 9, 0) + struct.pack("<3f", 1, 2.5, 3) + b"P"
    h, payload = recordio.unpack(m)
    assert h.flag == 3 and payload == b"P"
    np.testing.assert_array_equal(h.label, np.array([1, 2.5, 3], np.float32))
    h, _ = recordio.unpack(recordio.pack(recordio.IRHeader(0, [4.0], 1, 0), b""))
    assert h.flag == 1 and isinstance(h.label, np.ndarray)


def test_multi_label_round_trip_through_file(tmp_path):
    path = str(tmp_path / "m.rec")
    w = recordio.MXRecordIO(path, "w")
    payload = struct.pack("<I", MAGIC) * 3
    w.write(recordio.pack(recordio.IRHeader(0, [1, 2], 5, 0), payload))
    w.close()
    r = recordio.MXRecordIO(path, "r")
    h, s = recordio.unpack(r.read())
    assert s == payload and list(h.label) == [1, 2]


def test_pack_img_unpack_img(tmp_path):
    img = (np.arange(32 * 48 * 3) % 251).astype(np.uint8).reshape(32, 48, 3)
    s = recordio.pack_img(recordio.IRHeader(0, 1, 2, 0), img, img_fmt=".png")
    h, dec = recordio.unpack_img(s)
    assert h.label == 1
    np.testing.assert_array_equal(dec, img)  # PNG is lossless; both BGR
    s = recordio.pack_img(recordio.IRHeader(0, 1, 2, 0), img, quality=90, img_fmt=".jpg")
    _, dec = recordio.unpack_img(s, 1)
    assert dec.shape == img.shape


@pytest.mark.parametrize("mutate,message", [
    (lambda b: b"\x00\x00\x00\x00" + b[4:], "bad magic word"),
    (lambda b: b[:-5], "truncated"),
    (lambda b: b[:4] + struct.pack("<I", 1 << 28) + b[8:], "truncated"),
    (lambda b: b[:6], "truncated"),
    (lambda b: b[:4] + struct.pack("<I", (2 << 29) | 8) + b[8:], "continuation flag 2"),
])
def test_corrupt_record_file(tmp_path, mutate, message):
    rec, _, _, _ = write_reference(tmp_path)
    data = mutate(open(rec, "rb").read())
    bad = str(tmp_path / "bad.rec")
    open(bad, "wb").write(data)
    r = recordio.MXRecordIO(bad, "r")
    with pytest.raises(mx.MXNetError) as e:
        while r.read() is not None:
            pass
    assert message in str(e.value) and "bad.rec" in str(e.value) and "byte offset" in str(e.value)
    assert r.read() is None  # no loop over the same bad bytes


def test_corrupt_index(tmp_path):
    rec, idx, _, _ = write_reference(tmp_path)
    with open(idx, "a") as f:
        f.write("99\t999999\n")
    with pytest.raises(mx.MXNetError, match="line 8.*beyond the record file"):
        recordio.MXIndexedRecordIO(idx, rec, "r")
    with open(idx, "w") as f:
        f.write("1\tx\n")
    with pytest.raises(mx.MXNetError, match="line 1"):
        recordio.MXIndexedRecordIO(idx, rec, "r")


def test_missing_file_and_bad_flag(tmp_path):
    with pytest.raises(mx.MXNetError, match="nope.rec"):
        recordio.MXRecordIO(str(tmp_path / "nope.rec"), "r")
    with pytest.raises(ValueError):
        recordio.MXRecordIO(str(tmp_path / "x.rec"), "a")


def test_short_irheader():
    with pytest.raises(mx.MXNetError, match="shorter than"):
        recordio.unpack(b"abc")
    with pytest.raises(mx.MXNetError, match="labels"):
        recordio.unpack(struct.pack("<IfQQ", 100, 0, 0, 0))


def test_reference_set_reads_with_list(tmp_path):
    rec, idx, lst, _ = write_reference(tmp_path)
    assert os.path.getsize(rec) % 4 == 0
    lines = open(lst).read().splitlines()
    assert lines[1] == "10\t1.000000\timg_1.jpg"
