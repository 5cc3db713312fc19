"""mx.recordio: MXNet's RecordIO files (docs/io.md, "RecordIO"): MXRecordIO, MXIndexedRecordIO,
IRHeader and pack/unpack of image records. Reading and writing run in C++
(nanomx/c_api_io.h); files made by MXNet load here and the other way round."""
import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from .base import _LIB, MXNetError  # noqa: F401

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img"]


class MXRecordIO(object):
    """Reads ('r') or writes ('w') a RecordIO file: read() gives the next record as bytes (None
    at the end), write(buf) appends one, tell() is the offset of the next record."""

    def __init__(self, uri, flag):
        self.uri = str(uri)
        self.handle = None
        self.flag = flag
        self.pid = None
        self.is_open = False
        self.open()

    def open(self):
        if self.flag == "w":
            self.handle = _LIB.recordio_writer_create(self.uri)
            self.writable = True
        elif self.flag == "r":
            self.handle = _LIB.recordio_reader_create(self.uri)
            self.writable = False
        else:
            raise ValueError("Invalid flag %s: expected 'r' or 'w'" % self.flag)
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __getstate__(self):
        is_open = self.is_open
        self.close()
        d = dict(self.__dict__)
        d["is_open"] = is_open
        d["handle"] = None
        if is_open:
            self.open()
        return d

    def __setstate__(self, d):
        self.__dict__ = d
        is_open = d["is_open"]
        self.is_open = False
        self.handle = None
        if is_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        if self.pid != os.getpid():
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError("Forbidden operation in multiple processes")

    def close(self):
        if not self.is_open:
            return
        if self.writable:
            _LIB.recordio_writer_free(self.handle)
        else:
            _LIB.recordio_reader_free(self.handle)
        self.is_open = False
        self.pid = None
        self.handle = None

    def reset(self):
        """Back to the start (a writer starts the file over)."""
        self.close()
        self.open()

    def write(self, buf):
        assert self.writable, "write needs a RecordIO opened with 'w'"
        self._check_pid(allow_reset=False)
        if isinstance(buf, str):
            buf = buf.encode("utf-8")
        _LIB.recordio_writer_write(self.handle, buf)

    def read(self):
        assert not self.writable, "read needs a RecordIO opened with 'r'"
        self._check_pid(allow_reset=False)
        return _LIB.recordio_reader_read(self.handle)

    def tell(self):
        if self.writable:
            return _LIB.recordio_writer_tell(self.handle)
        return _LIB.recordio_reader_tell(self.handle)


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an .idx index (`key\\toffset` lines) for random access: read_idx,
    write_idx, seek, keys."""

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = str(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super(MXIndexedRecordIO, self).__init__(uri, flag)

    def open(self):
        super(MXIndexedRecordIO, self).open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)
        if not self.writable:
            size = os.path.getsize(self.uri)
            for number, line in enumerate(iter(self.fidx.readline, ""), 1):
                text = line.strip()
                if not text:
                    continue
                parts = text.split("\t")
                try:
                    if len(parts) != 2:
                        raise ValueError
                    key = self.key_type(parts[0])
                    offset = int(parts[1])
                except ValueError:
                    raise MXNetError("RecordIO index '%s' line %d: expected '<key>\\t<offset>', "
                                     "got %r" % (self.idx_path, number, text[:80]))
                if offset < 0 or offset >= size:
                    raise MXNetError("RecordIO index '%s' line %d: key %s points to byte offset "
                                     "%d, beyond the record file '%s' (%d bytes)"
                                     % (self.idx_path, number, parts[0], offset, self.uri, size))
                self.idx[key] = offset
                self.keys.append(key)

    def close(self):
        if not self.is_open:
            return
        super(MXIndexedRecordIO, self).close()
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None

    def __getstate__(self):
        d = super(MXIndexedRecordIO, self).__getstate__()
        d["fidx"] = None
        return d

    def seek(self, idx):
        """Positions the reader at the record of key `idx`."""
        assert not self.writable
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise KeyError("RecordIO index '%s' has no key %r" % (self.idx_path, idx))
        _LIB.recordio_reader_seek(self.handle, self.idx[idx])

    def tell(self):
        return super(MXIndexedRecordIO, self).tell()

    def read_idx(self, idx):
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write("%s\t%d\n" % (str(key), pos))
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
"""An image record's header: flag (0: one label; k > 0: k labels follow), label, id, id2."""

_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """Packs a header and a string (bytes) into one record."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """(header, payload) of a record; header.label is a float32 array when flag > 0."""
    if len(s) < _IR_SIZE:
        raise MXNetError("image record: %d bytes is shorter than the %d-byte IRHeader"
                         % (len(s), _IR_SIZE))
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise MXNetError("image record: the header says %d labels but only %d bytes follow"
                             % (header.flag, len(s)))
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def unpack_img(s, iscolor=-1):
    """(header, image): the image decoded as OpenCV does (BGR numpy array)."""
    header, s = unpack(s)
    from .ndarray import NDArray
    img = NDArray(_LIB.image_decode(s, iscolor, 0)).asnumpy()
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    return header, img


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Encodes a (BGR, uint8) numpy image as JPEG (quality) or PNG (compression) and packs it."""
    img = np.ascontiguousarray(np.asarray(img), dtype=np.uint8)
    fmt = img_fmt.lower()
    if fmt not in (".jpg", ".jpeg", ".png"):
        raise ValueError("pack_img: img_fmt %r is not .jpg, .jpeg or .png" % img_fmt)
    buf = _LIB.image_encode(img, fmt, int(quality))
    return pack(header, buf)
