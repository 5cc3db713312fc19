"""MXNet 1.x's mx.image: imdecode, imresize and the crop helpers, the Augmenter classes,
CreateAugmenter and ImageIter (docs/io.md, "ImageIter").

ImageIter with augmenters from its keywords (CreateAugmenter's) runs the whole pipeline in C++:
a pool of threads (NANOMX_CPU_WORKER_NTHREADS / MXNET_CPU_WORKER_NTHREADS) decodes and augments
while batches are prefetched. With an explicit aug_list it decodes in C++ and runs the given
augmenters in Python, one image at a time, as MXNet does."""
import json
import logging
import numbers
import os
import random

import numpy as np

from .. import ndarray as nd
from .. import io
from ..io import _image_pipeline
from ..base import _LIB, MXNetError  # noqa: F401
from ..ndarray import NDArray
from .. import recordio

__all__ = ["imdecode", "imread", "imresize", "scale_down", "resize_short", "fixed_crop",
           "random_crop", "center_crop", "random_size_crop", "color_normalize", "Augmenter",
           "SequentialAug", "RandomOrderAug", "ResizeAug", "ForceResizeAug", "RandomCropAug",
           "RandomSizedCropAug", "CenterCropAug", "BrightnessJitterAug", "ContrastJitterAug",
           "SaturationJitterAug", "HueJitterAug", "ColorJitterAug", "LightingAug",
           "ColorNormalizeAug", "RandomGrayAug", "HorizontalFlipAug", "CastAug",
           "CreateAugmenter", "ImageIter"]


def _np(src):
    return src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)


def _nd(value, like=None):
    dtype = value.dtype if like is None else _np(like).dtype
    return nd.array(np.ascontiguousarray(value), dtype=dtype)


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decodes an image (bytes) to a uint8 (H, W, C) NDArray: RGB with to_rgb (the default),
    3 channels for flag 1, 1 for flag 0, unchanged for -1."""
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().astype(np.uint8).tobytes()
    elif isinstance(buf, np.ndarray):
        buf = buf.astype(np.uint8).tobytes()
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError("imdecode: buf must be bytes, got %s" % type(buf).__name__)
    img = NDArray(_LIB.image_decode(bytes(buf), int(flag), int(to_rgb)))
    if out is not None:
        out[:] = img
        return out
    return img


def imread(filename, flag=1, to_rgb=1, out=None):
    """Reads and decodes an image file (see imdecode)."""
    with open(filename, "rb") as f:
        return imdecode(f.read(), flag, to_rgb, out)


def imresize(src, w, h, interp=1, out=None):
    """Resizes a (H, W, C) image to (h, w, C) with OpenCV (interp: 0 nearest, 1 bilinear,
    2 bicubic, 3 area, 4 lanczos4)."""
    if not isinstance(src, NDArray):
        src = nd.array(np.asarray(src))
    squeeze = src.ndim == 2
    if squeeze:
        src = src.reshape(src.shape + (1,))
    res = NDArray(_LIB.image_resize(src.handle, int(w), int(h), int(interp)))
    if squeeze:
        res = res.reshape(res.shape[:2])
    if out is not None:
        out[:] = res
        return out
    return res


def _get_interp_method(interp, sizes=()):
    if interp == 9:
        if sizes:
            assert len(sizes) == 4
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError("Unknown interp method %d" % interp)
    return interp


def scale_down(src_size, size):
    """Scales size (w, h) down to fit src_size (w, h), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def resize_short(src, size, interp=2):
    """Resizes the shorter edge to size (the longer edge as long*size//short)."""
    h, w = src.shape[:2]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crops src[y0:y0+h, x0:x0+w], then resizes to size (w, h) when given and different."""
    out = _nd(_np(src)[y0:y0 + h, x0:x0 + w], src)
    if size is not None and (w, h) != size:
        sizes = (h, w, size[1], size[0])
        out = imresize(out, *size, interp=_get_interp_method(interp, sizes))
    return out


def random_crop(src, size, interp=2):
    """A random crop of size (w, h) (scaled down to fit), resized to size; (out, (x, y, w, h))."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """The centred crop of size (w, h) (scaled down to fit), resized to size."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """(src - mean) / std."""
    if mean is not None:
        src = src - mean
    if std is not None:
        src = src / std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """A crop of random area (fraction `area` of the source, or (min, max)) and aspect ratio
    (`ratio` range, drawn log-uniformly), resized to size; ten tries, then a centre crop."""
    h, w = src.shape[:2]
    src_area = h * w
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    assert not kwargs, "unexpected keyword arguments for `random_size_crop`."
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
            return out, (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


class Augmenter(object):
    """An image augmenter: __call__(src) returns the augmented NDArray."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for k, v in self._kwargs.items():
            if isinstance(v, NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                v = v.tolist()
                self._kwargs[k] = v

    def dumps(self):
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError("Must override implementation.")


class SequentialAug(Augmenter):
    def __init__(self, ts):
        super(SequentialAug, self).__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    def __init__(self, size, interp=2):
        super(ResizeAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    def __init__(self, size, interp=2):
        super(ForceResizeAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    def __init__(self, size, interp=2):
        super(RandomCropAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super(RandomSizedCropAug, self).__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size = size
        if "min_area" in kwargs:
            area = kwargs.pop("min_area")
        self.area = area
        self.ratio = ratio
        self.interp = interp
        assert not kwargs, "unexpected keyword arguments for `RandomSizedCropAug`."

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    def __init__(self, size, interp=2):
        super(CenterCropAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class RandomOrderAug(Augmenter):
    def __init__(self, ts):
        super(RandomOrderAug, self).__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src):
        random.shuffle(self.ts)
        for t in self.ts:
            src = t(src)
        return src


_GRAY_COEF = np.array([[[0.299, 0.587, 0.114]]], dtype=np.float32)


class BrightnessJitterAug(Augmenter):
    def __init__(self, brightness):
        super(BrightnessJitterAug, self).__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        return src * alpha


class ContrastJitterAug(Augmenter):
    def __init__(self, contrast):
        super(ContrastJitterAug, self).__init__(contrast=contrast)
        self.contrast = contrast

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        a = _np(src)
        gray = a * _GRAY_COEF
        gray = (3.0 * (1.0 - alpha) / gray.size) * np.sum(gray)
        return _nd(a * alpha + gray, src)


class SaturationJitterAug(Augmenter):
    def __init__(self, saturation):
        super(SaturationJitterAug, self).__init__(saturation=saturation)
        self.saturation = saturation

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        a = _np(src)
        gray = np.sum(a * _GRAY_COEF, axis=2, keepdims=True) * (1.0 - alpha)
        return _nd(a * alpha + gray, src)


class HueJitterAug(Augmenter):
    def __init__(self, hue):
        super(HueJitterAug, self).__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321],
                              [0.211, -0.523, 0.311]])
        self.ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u = np.cos(alpha * np.pi)
        w = np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, bt), self.tyiq).T
        return _nd(np.dot(_np(src), t), src)


class ColorJitterAug(RandomOrderAug):
    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super(ColorJitterAug, self).__init__(ts)


class LightingAug(Augmenter):
    def __init__(self, alphastd, eigval, eigvec):
        super(LightingAug, self).__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        return _nd(_np(src) + rgb, src)


class ColorNormalizeAug(Augmenter):
    def __init__(self, mean, std):
        super(ColorNormalizeAug, self).__init__(mean=mean, std=std)
        self.mean = nd.array(mean) if mean is not None else None
        self.std = nd.array(std) if std is not None else None

    def __call__(self, src):
        mean = None if self.mean is None else _np(self.mean)
        std = None if self.std is None else _np(self.std)
        return _nd(color_normalize(_np(src), mean, std), src)


class RandomGrayAug(Augmenter):
    def __init__(self, p):
        super(RandomGrayAug, self).__init__(p=p)
        self.p = p
        self.mat = np.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __call__(self, src):
        if random.random() < self.p:
            src = _nd(np.dot(_np(src), self.mat), src)
        return src


class HorizontalFlipAug(Augmenter):
    def __init__(self, p):
        super(HorizontalFlipAug, self).__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = _nd(_np(src)[:, ::-1], src)
        return src


class CastAug(Augmenter):
    def __init__(self, typ="float32"):
        super(CastAug, self).__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


_DEFAULT_MEAN = np.array([123.68, 116.28, 103.53])
_DEFAULT_STD = np.array([58.395, 57.12, 57.375])
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False, rand_mirror=False,
                    mean=None, std=None, brightness=0, contrast=0, saturation=0, hue=0,
                    pca_noise=0, rand_gray=0, inter_method=2):
    """MXNet's augmenter list, in MXNet's order: resize, crop (random sized / random / centre),
    flip, cast to float32, colour jitter, hue, PCA lighting, random gray, normalisation."""
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        assert rand_crop
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, _EIGVAL, _EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = _DEFAULT_MEAN
    elif mean is not None:
        assert isinstance(mean, (np.ndarray, NDArray, list, tuple)) and len(mean) in [1, 3]
    if std is True:
        std = _DEFAULT_STD
    elif std is not None:
        assert isinstance(std, (np.ndarray, NDArray, list, tuple)) and len(std) in [1, 3]
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist


def _cpu_threads():
    for name in ("NANOMX_CPU_WORKER_NTHREADS", "MXNET_CPU_WORKER_NTHREADS"):
        value = os.environ.get(name)
        if value:
            try:
                return max(1, int(value))
            except ValueError:
                raise MXNetError("%s=%r is not an integer" % (name, value))
    return 1


def _draw_seed():
    """A 63-bit seed from nanomx's generator, so that mx.random.seed fixes the pipeline's
    shuffles and augmentations."""
    draws = nd.random.uniform(0, 1 << 21, shape=(3,)).asnumpy().astype(np.int64)
    return int(draws[0]) << 42 | int(draws[1]) << 21 | int(draws[2])


def _list_text(entries):
    """.lst text of [(index, [labels], path)]."""
    lines = []
    for index, labels, path in entries:
        labels = np.atleast_1d(np.asarray(labels, dtype=np.float64))
        lines.append("\t".join([str(int(index))] + ["%r" % float(v) for v in labels] + [path]))
    return "\n".join(lines) + "\n"


class ImageIter(io.DataIter):
    """MXNet's image iterator over a .rec file (optionally with .idx) or an image list.

    Without aug_list, the augmenters of CreateAugmenter(data_shape, **kwargs) run in C++ on a
    pool of threads, with prefetch. With aug_list, images are decoded in C++ and augmented in
    Python. Batches: data (batch_size, C, H, W) float32, label (batch_size,) or
    (batch_size, label_width); DataBatch.pad counts the filler images of the last batch."""

    _AUG_KEYS = ("resize", "rand_crop", "rand_resize", "rand_mirror", "mean", "std",
                 "brightness", "contrast", "saturation", "hue", "pca_noise", "rand_gray",
                 "inter_method")

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None, data_name="data",
                 label_name="softmax_label", dtype="float32", last_batch_handle="pad",
                 **kwargs):
        super(ImageIter, self).__init__(batch_size)
        assert path_imgrec or path_imglist or (isinstance(imglist, list)), \
            "Either path_imgrec, path_imglist or imglist must be provided"
        if len(data_shape) != 3 or data_shape[0] != 3:
            raise ValueError("data_shape must be (3, H, W), got %s" % (data_shape,))
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError("last_batch_handle must be 'pad', 'discard' or 'roll_over', got %r"
                             % (last_batch_handle,))
        if not 0 <= part_index < num_parts:
            raise ValueError("part_index %d is not in [0, num_parts=%d)" % (part_index, num_parts))
        unknown = sorted(set(kwargs) - set(self._AUG_KEYS))
        if unknown:
            raise TypeError("ImageIter got unexpected keyword argument(s) %s (CreateAugmenter "
                            "takes %s)" % (", ".join(unknown), ", ".join(self._AUG_KEYS)))
        threads = _cpu_threads()
        logging.info("Using %s threads for decoding...", threads)
        self.batch_size = batch_size
        self.data_shape = tuple(data_shape)
        self.label_width = label_width
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.dtype = dtype
        self.provide_data = [io.DataDesc(data_name, (batch_size,) + self.data_shape)]
        if label_width > 1:
            self.provide_label = [io.DataDesc(label_name, (batch_size, label_width))]
        else:
            self.provide_label = [io.DataDesc(label_name, (batch_size,))]
        self.auglist = aug_list
        self._handle = None
        entries = None
        if imglist is not None:
            entries = []
            for index, img in enumerate(imglist, 1):
                if len(img) > 2:
                    label = img[:-1]
                elif isinstance(img[0], numbers.Number):
                    label = [img[0]]
                else:
                    label = img[0]
                entries.append((index, label, img[-1]))
        self._python = aug_list is not None
        if self._python:
            self._init_python(path_imgrec, path_imglist, path_root, path_imgidx, entries,
                              part_index, num_parts)
            self.reset()
            return
        self.auglist = CreateAugmenter(self.data_shape, **kwargs)
        cfg = {"batch_size": batch_size, "data_shape": ",".join(str(d) for d in data_shape),
               "label_width": label_width, "shuffle": int(bool(shuffle)),
               "part_index": part_index, "num_parts": num_parts,
               "last_batch_handle": last_batch_handle, "seed": _draw_seed(),
               "threads": threads, "prefetch": 2, "name": "ImageIter"}
        if path_imgrec:
            cfg["path_imgrec"] = path_imgrec
        if path_imgidx:
            cfg["path_imgidx"] = path_imgidx
        if path_imglist:
            cfg["path_imglist"] = path_imglist
        if path_root:
            cfg["path_root"] = path_root
        if entries is not None:
            cfg["imglist"] = _list_text(entries)
        cfg.update(_augment_config(self.data_shape, **kwargs))
        self._handle = _image_pipeline.create(cfg)

    __del__ = _image_pipeline.free

    def reset(self):
        """Starts the next epoch (reshuffles when shuffle; a rolled-over partial batch is kept)."""
        if self._python:
            self._py_reset()
        else:
            _LIB.image_iter_reset(self._handle, 0)

    def hard_reset(self):
        """reset() that also drops a rolled-over partial batch."""
        if self._python:
            self._cache = None
            self._py_reset()
        else:
            _LIB.image_iter_reset(self._handle, 1)

    def next(self):
        if self._python:
            return self._py_next()
        return _image_pipeline.next_batch(self._handle)

    def __next__(self):
        return self.next()

    def iter_next(self):
        raise NotImplementedError("ImageIter: use next()")

    # ---- aug_list given: the augmenters run in Python ------------------------------------
    def _init_python(self, path_imgrec, path_imglist, path_root, path_imgidx, entries,
                     part_index, num_parts):
        self.path_root = path_root
        self.imgrec = None
        self.imglist = None
        self.seq = None
        if path_imglist:
            entries = []
            with open(path_imglist) as fin:
                for number, line in enumerate(fin, 1):
                    cols = [c.strip() for c in line.strip().split("\t")]
                    if not line.strip():
                        continue
                    if len(cols) < 3:
                        raise MXNetError("image list '%s' line %d: expected index, label(s) and "
                                         "path" % (path_imglist, number))
                    entries.append((int(cols[0]), [float(v) for v in cols[1:-1]], cols[-1]))
        if entries is not None:
            self.imglist = {e[0]: (np.asarray(e[1], dtype=self.dtype), e[2]) for e in entries}
            self.seq = [e[0] for e in entries]
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                if self.seq is None:
                    self.seq = list(self.imgrec.keys)
            else:
                if self.seq is not None:
                    raise MXNetError("ImageIter: path_imglist/imglist with path_imgrec needs "
                                     "path_imgidx")
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        if self.seq is not None and num_parts > 1:
            n = len(self.seq)
            self.seq = self.seq[n * part_index // num_parts:n * (part_index + 1) // num_parts]
        self._cache = None
        self._allow_read = True
        self.cur = 0

    def _py_reset(self):
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True

    def next_sample(self):
        if not self._allow_read:
            raise StopIteration
        if self.seq is not None:
            if self.cur >= len(self.seq):
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            idx = self.seq[self.cur]
            self.cur += 1
            if self.imgrec is not None:
                header, img = recordio.unpack(self.imgrec.read_idx(idx))
                if self.imglist is None:
                    return header.label, img
                return self.imglist[idx][0], img
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        s = self.imgrec.read()
        if s is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        header, img = recordio.unpack(s)
        return header.label, img

    def read_image(self, fname):
        with open(os.path.join(self.path_root, fname) if self.path_root else fname, "rb") as f:
            return f.read()

    def _fill(self, data, label, start):
        i = start
        try:
            while i < self.batch_size:
                lab, s = self.next_sample()
                img = imdecode(s)
                for aug in self.auglist:
                    img = aug(img)
                a = _np(img)
                if a.shape[:2] != self.data_shape[1:]:
                    raise MXNetError("ImageIter: an augmented image is %s, expected (%d, %d, 3)"
                                     % (a.shape, self.data_shape[1], self.data_shape[2]))
                data[i] = np.transpose(a, (2, 0, 1))
                label[i] = np.asarray(lab, dtype=np.float32).reshape(label[i].shape)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _py_next(self):
        c, h, w = self.data_shape
        if self._cache is not None:
            data, label, i = self._cache
            self._cache = None
        else:
            data = np.zeros((self.batch_size, c, h, w), dtype=np.float32)
            label = np.zeros(self.provide_label[0][1], dtype=np.float32)
            i = 0
        try:
            i = self._fill(data, label, i)
        except StopIteration:
            if i == 0:
                raise
        pad = self.batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over":
                self._cache = (data, label, i)
                raise StopIteration
            self._fill(data, label, i)
            self._allow_read = False
        return io.DataBatch([nd.array(data)], [nd.array(label)], pad=pad)


def _augment_config(data_shape, resize=0, rand_crop=False, rand_resize=False, rand_mirror=False,
                    mean=None, std=None, brightness=0, contrast=0, saturation=0, hue=0,
                    pca_noise=0, rand_gray=0, inter_method=2):
    """CreateAugmenter's keywords as the C++ pipeline's configuration."""
    cfg = {"resize": int(resize), "inter_method": int(inter_method),
           "rand_mirror": int(bool(rand_mirror)), "brightness": float(brightness),
           "contrast": float(contrast), "saturation": float(saturation), "hue": float(hue),
           "pca_noise": float(pca_noise), "rand_gray": float(rand_gray)}
    if rand_resize:
        assert rand_crop, "rand_resize needs rand_crop"
        cfg["crop"] = "random_sized"
    elif rand_crop:
        cfg["crop"] = "random"
    else:
        cfg["crop"] = "center"
    if mean is True:
        mean = _DEFAULT_MEAN
    if std is True:
        std = _DEFAULT_STD
    if mean is not None or std is not None:
        mean = np.zeros(3) if mean is None else np.atleast_1d(_np(mean)).astype(np.float64)
        std = np.ones(3) if std is None else np.atleast_1d(_np(std)).astype(np.float64)
        cfg["mean"] = ",".join(repr(float(v)) for v in mean)
        cfg["std"] = ",".join(repr(float(v)) for v in std)
    return cfg


