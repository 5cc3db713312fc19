"""mx.io.ImageRecordIter: MXNet's C++ image record iterator (keyword arguments only), on nanomx's
threaded image pipeline (docs/io.md, "ImageRecordIter"). The default crop is MXNet's: an image
smaller than data_shape is scaled up to cover it, then a centre (or rand_crop) crop of (H, W) is
taken at 1:1; then mirror, then (pixel - mean) * scale / std per channel."""
import os

from ..base import _LIB, MXNetError
from . import _image_pipeline
from .io import DataDesc, DataIter

__all__ = ["ImageRecordIter"]

# Keywords of MXNet's ImageRecordIter that change nothing here (devices, logging, chunked
# shuffling's seeds): accepted, as MXNet's parameter structs accept them.
_IGNORED = {"ctx", "device_id", "verbose", "aug_seq", "shuffle_chunk_size", "shuffle_chunk_seed",
            "seed_aug"}
# Augmentations of MXNet's ImageRecordIter that nanomx's pipeline does not implement (docs/io.md),
# with the value that turns each off: accepted at that value, refused at any other, so that a
# training run never silently loses an augmentation it asked for.
_NOT_IMPLEMENTED = {"max_rotate_angle": 0, "rotate": -1, "max_shear_ratio": 0,
                    "max_random_scale": 1, "min_random_scale": 1, "max_img_size": 1e10,
                    "min_img_size": 0, "fill_value": 255, "pad": 0, "random_h": 0, "random_s": 0,
                    "random_l": 0, "mean_img": "", "mean_a": 0, "std_a": 1,
                    "max_random_contrast": 0, "max_random_illumination": 0,
                    "max_crop_size": -1, "min_crop_size": -1}


def _is_off(key, value):
    off = _NOT_IMPLEMENTED[key]
    if isinstance(off, str):
        return value in (None, off)
    try:
        return float(value) == float(off)
    except (TypeError, ValueError):
        return False


class ImageRecordIter(DataIter):
    """Batches of (batch_size, C, H, W) images from a .rec file, decoded and augmented in C++ by
    preprocess_threads threads with prefetch_buffer batches ready ahead."""

    def __init__(self, *args, **kwargs):
        if args:
            raise TypeError("ImageRecordIter can only accept keyword arguments")
        data_name = kwargs.pop("data_name", "data")
        label_name = kwargs.pop("label_name", "softmax_label")
        if not kwargs.get("path_imgrec"):
            raise MXNetError("ImageRecordIter2: must specify image_rec (the path_imgrec keyword)")
        if "batch_size" not in kwargs:
            raise MXNetError("ImageRecordIter: batch_size is required")
        if "data_shape" not in kwargs:
            raise MXNetError("ImageRecordIter: data_shape is required")
        batch_size = int(kwargs.pop("batch_size"))
        shape = tuple(int(d) for d in kwargs.pop("data_shape"))
        if len(shape) != 3 or shape[0] not in (1, 3, 4) or min(shape) <= 0:
            raise MXNetError("ImageRecordIter: Invalid output shape %s: expected (C, H, W) with "
                             "C 1, 3 or 4" % (shape,))
        super(ImageRecordIter, self).__init__(batch_size)
        threads = int(kwargs.pop("preprocess_threads", 4))
        threads = max(1, min(threads, os.cpu_count() or 1))
        cfg = {"path_imgrec": kwargs.pop("path_imgrec"), "batch_size": batch_size,
               "data_shape": ",".join(str(d) for d in shape), "threads": threads,
               "prefetch": int(kwargs.pop("prefetch_buffer", 4)),
               "name": "ImageRecordIter", "inter_method": int(kwargs.pop("inter_method", 1))}
        for key in ("path_imgidx", "path_imglist"):
            if kwargs.get(key):
                cfg[key] = kwargs.pop(key)
            kwargs.pop(key, None)
        label_width = int(kwargs.pop("label_width", 1))
        cfg["label_width"] = label_width
        cfg["shuffle"] = int(bool(kwargs.pop("shuffle", False)))
        cfg["seed"] = int(kwargs.pop("seed", 0))
        cfg["part_index"] = int(kwargs.pop("part_index", 0))
        cfg["num_parts"] = int(kwargs.pop("num_parts", 1))
        cfg["last_batch_handle"] = "pad" if kwargs.pop("round_batch", True) else "discard"
        cfg["resize"] = max(0, int(kwargs.pop("resize", -1)))
        dtype = kwargs.pop("dtype", None)
        dtype = "float32" if dtype in (None, "None") else str(getattr(dtype, "__name__", dtype))
        if dtype not in ("float32", "uint8"):
            raise MXNetError("unknown dtype for ImageRecordIter2: %s (nanomx implements float32 "
                             "and uint8)" % dtype)
        cfg["dtype"] = dtype
        rand_crop = bool(kwargs.pop("rand_crop", False))
        if kwargs.pop("random_resized_crop", False):
            cfg["crop"] = "random_sized"
            cfg["min_area"] = float(kwargs.pop("min_random_area", 1.0))
            cfg["max_area"] = float(kwargs.pop("max_random_area", 1.0))
            ratio = float(kwargs.pop("max_aspect_ratio", 0.0))
            lo = kwargs.pop("min_aspect_ratio", None)
            cfg["min_ratio"] = float(lo) if lo is not None else 1.0 - ratio
            cfg["max_ratio"] = 1.0 + ratio
        else:
            cfg["crop"] = "record_random" if rand_crop else "record"
        for k in ("min_random_area", "max_random_area", "max_aspect_ratio", "min_aspect_ratio"):
            kwargs.pop(k, None)
        cfg["rand_mirror"] = int(bool(kwargs.pop("rand_mirror", False)))
        kwargs.pop("mirror", None)
        mean = [float(kwargs.pop("mean_" + c, 0.0)) for c in "rgb"]
        std = [float(kwargs.pop("std_" + c, 1.0)) for c in "rgb"]
        cfg["mean"] = ",".join(repr(v) for v in mean)
        cfg["std"] = ",".join(repr(v) for v in std)
        cfg["scale"] = float(kwargs.pop("scale", 1.0))
        for key in ("brightness", "contrast", "saturation", "pca_noise"):
            if key in kwargs:
                cfg[key] = float(kwargs.pop(key))
        for key in sorted(k for k in kwargs if k in _NOT_IMPLEMENTED):
            if not _is_off(key, kwargs[key]):
                raise MXNetError("ImageRecordIter: %s=%r is not implemented by nanomx (only %r, "
                                 "which turns it off; see docs/io.md)"
                                 % (key, kwargs[key], _NOT_IMPLEMENTED[key]))
        unknown = sorted(k for k in kwargs if k not in _IGNORED and k not in _NOT_IMPLEMENTED)
        if unknown:
            raise MXNetError("ImageRecordIter: unknown argument(s) %s" % ", ".join(unknown))
        self._handle = _image_pipeline.create(cfg)
        self.data_name, self.label_name = data_name, label_name
        self.first_batch = None
        self.first_batch = self.next()
        data, label = self.first_batch.data[0], self.first_batch.label[0]
        self.provide_data = [DataDesc(data_name, data.shape, data.dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, label.dtype)]
        self.batch_size = data.shape[0]

    __del__ = _image_pipeline.free

    def reset(self):
        self.first_batch = None
        _LIB.image_iter_reset(self._handle, 0)

    def next(self):
        if self.first_batch is not None:
            batch, self.first_batch = self.first_batch, None
            return batch
        return _image_pipeline.next_batch(self._handle)

    def iter_next(self):
        raise NotImplementedError("ImageRecordIter: use next()")
