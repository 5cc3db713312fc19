"""Image transforms as Blocks (MXNet 1.x's gluon.data.vision.transforms).

Images are (H, W, C) NDArrays (uint8 as decoded, or float), batches (N, H, W, C); ToTensor
turns them into float32 (C, H, W) / (N, C, H, W) in [0, 1], which Normalize expects.

MXNet computes these with its `image` operators (F.image.*); nanomx has none, so:
- Cast, ToTensor and Normalize are HybridBlocks over ordinary operators (cast, swapaxes, split,
  concat, scalar arithmetic), hybridizable as in MXNet;
- the geometric and random transforms (Resize, CenterCrop, RandomResizedCrop, CropResize, the
  flips and the colour jitters) are Blocks computed with mx.image / mx.nd on NDArrays, so that
  Compose keeps them out of its hybridized runs.
Random choices use Python's `random` module (as mx.image's augmenters do).
"""
import random

import numpy as np

from ...block import Block, HybridBlock
from ...nn import Sequential, HybridSequential
from .... import image
from .... import ndarray as nd
from ....base import numeric_types

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "RandomResizedCrop", "CropResize",
           "CenterCrop", "Resize", "RandomFlipLeftRight", "RandomFlipTopBottom",
           "RandomBrightness", "RandomContrast", "RandomSaturation", "RandomHue",
           "RandomColorJitter", "RandomLighting", "RandomApply"]


class Compose(Sequential):
    """Applies `transforms` in order. Consecutive HybridBlocks are grouped into one
    hybridized HybridSequential (a single HybridBlock stays as it is)."""

    def __init__(self, transforms):
        super(Compose, self).__init__()
        run = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                run.append(t)
                continue
            if len(run) == 1:
                self.add(run[0])
            elif len(run) > 1:
                group = HybridSequential()
                for member in run:
                    group.add(member)
                group.hybridize()
                self.add(group)
            run = []
            if t is not None:
                if not isinstance(t, Block):
                    raise TypeError("Compose: every transform must be a Block, got %s"
                                    % type(t).__name__)
                self.add(t)


class Cast(HybridBlock):
    """Casts the input to `dtype` (float32 by default)."""

    def __init__(self, dtype="float32"):
        super(Cast, self).__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, dtype=self._dtype)


class ToTensor(HybridBlock):
    """(H, W, C) or (N, H, W, C) images in [0, 255] -> float32 (C, H, W) or (N, C, H, W) in
    [0, 1]."""

    def __init__(self):
        super(ToTensor, self).__init__()

    def hybrid_forward(self, F, x):
        # (.., H, W, C) -> (.., C, W, H) -> (.., C, H, W), whatever the number of axes.
        x = F.swapaxes(F.swapaxes(x, dim1=-1, dim2=-3), dim1=-1, dim2=-2)
        return F.cast(x, dtype="float32") / 255.0


def _per_channel(values, what):
    """A number or a sequence of numbers as a tuple of floats."""
    if isinstance(values, numeric_types):
        return (float(values),)
    try:
        values = tuple(float(v) for v in values)
    except TypeError:
        raise TypeError("Normalize: %s must be a number or a sequence of numbers, got %r"
                        % (what, values)) from None
    if not values:
        raise ValueError("Normalize: %s must not be empty" % what)
    return values


class Normalize(HybridBlock):
    """(x - mean) / std per channel of a (C, H, W) or (N, C, H, W) tensor; a number applies to
    every channel, a sequence gives one value per channel."""

    def __init__(self, mean=0.0, std=1.0):
        super(Normalize, self).__init__()
        self._mean = mean
        self._std = std
        means, stds = _per_channel(mean, "mean"), _per_channel(std, "std")
        if any(s == 0 for s in stds):
            raise ValueError("Normalize: std must not be zero")
        if len(means) != len(stds):
            if 1 not in (len(means), len(stds)):
                raise ValueError("Normalize: mean has %d values and std %d"
                                 % (len(means), len(stds)))
            channels = max(len(means), len(stds))
            means = means * channels if len(means) == 1 else means
            stds = stds * channels if len(stds) == 1 else stds
        self._means, self._stds = means, stds

    def hybrid_forward(self, F, x):
        channels = len(self._means)
        if channels == 1:
            return (x - self._means[0]) / self._stds[0]
        # One slice per channel along the channel axis (third from the end in both layouts).
        parts = F.split(x, num_outputs=channels, axis=-3)
        out = [(parts[c] - self._means[c]) / self._stds[c] for c in range(channels)]
        return F.concat(*out, dim=-3)


def _as_size(size, what):
    if isinstance(size, numeric_types):
        return (int(size), int(size))
    size = tuple(int(s) for s in size)
    if len(size) != 2:
        raise ValueError("%s: size must be an int or (width, height), got %r" % (what, size))
    return size


def _per_image(x, fn):
    """fn on one (H, W, C) image, or on each image of an (N, H, W, C) batch."""
    if not isinstance(x, nd.NDArray):
        raise TypeError("expected an NDArray image, got %s" % type(x).__name__)
    if x.ndim == 3:
        return fn(x)
    if x.ndim == 4:
        return nd.stack(*[fn(x[i]) for i in range(x.shape[0])])
    raise ValueError("expected an (H, W, C) image or an (N, H, W, C) batch, got shape %s"
                     % (x.shape,))


class Resize(Block):
    """Resizes (H, W, C) images or (N, H, W, C) batches to `size`.

    size: (width, height), or an int: the short edge when keep_ratio (the long edge keeps the
    aspect ratio), else both edges. interpolation: OpenCV's code (1 bilinear)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super(Resize, self).__init__()
        if not isinstance(size, numeric_types):
            _as_size(size, "Resize")
        self._size = size
        self._keep = keep_ratio
        self._interpolation = interpolation

    def _target(self, h, w):
        if isinstance(self._size, numeric_types):
            size = int(self._size)
            if not self._keep:
                return size, size
            if h > w:
                return size, h * size // w
            return w * size // h, size
        return _as_size(self._size, "Resize")

    def forward(self, x):
        def one(img):
            w, h = self._target(img.shape[0], img.shape[1])
            return image.imresize(img, w, h, interp=self._interpolation)
        return _per_image(x, one)


class CenterCrop(Block):
    """Crops the centre `size` (width, height) of an (H, W, C) image, resizing up first when
    the image is smaller."""

    def __init__(self, size, interpolation=1):
        super(CenterCrop, self).__init__()
        self._args = (_as_size(size, "CenterCrop"), interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class RandomResizedCrop(Block):
    """A crop of random area (a fraction in `scale` of the image) and aspect ratio (in
    `ratio`), resized to `size` (width, height)."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super(RandomResizedCrop, self).__init__()
        self._args = (_as_size(size, "RandomResizedCrop"), scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class CropResize(Block):
    """Crops x[y:y+height, x:x+width] of (H, W, C) images or (N, H, W, C) batches, then
    resizes to `size` (width, height) when given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super(CropResize, self).__init__()
        self._x, self._y, self._width, self._height = int(x), int(y), int(width), int(height)
        self._size = None if size is None else _as_size(size, "CropResize")
        self._interpolation = 1 if interpolation is None else interpolation

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ValueError("CropResize: expected (H, W, C) or (N, H, W, C), got shape %s"
                             % (x.shape,))
        h, w = x.shape[-3], x.shape[-2]
        if self._x < 0 or self._y < 0 or self._x + self._width > w or \
                self._y + self._height > h:
            raise ValueError("CropResize: the crop (x=%d, y=%d, width=%d, height=%d) does not "
                             "fit in a %dx%d image" % (self._x, self._y, self._width,
                                                      self._height, w, h))
        out = nd.slice_axis(x, axis=-3, begin=self._y, end=self._y + self._height)
        out = nd.slice_axis(out, axis=-2, begin=self._x, end=self._x + self._width)
        if self._size is None:
            return out
        return _per_image(out, lambda img: image.imresize(img, self._size[0], self._size[1],
                                                          interp=self._interpolation))


class _RandomFlip(Block):
    def __init__(self, axis):
        super(_RandomFlip, self).__init__()
        self._axis = axis

    def forward(self, x):
        if random.random() < 0.5:
            return nd.flip(x, axis=self._axis)
        return x


class RandomFlipLeftRight(_RandomFlip):
    """Mirrors an (H, W, C) image (or a whole batch) left to right with probability 0.5."""

    def __init__(self):
        super(RandomFlipLeftRight, self).__init__(-2)


class RandomFlipTopBottom(_RandomFlip):
    """Flips an (H, W, C) image (or a whole batch) top to bottom with probability 0.5."""

    def __init__(self):
        super(RandomFlipTopBottom, self).__init__(-3)


_GRAY = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _factor(lo, hi):
    return random.uniform(lo, hi)


def _blend(x, other, alpha):
    """alpha * x + (1 - alpha) * other, in x's dtype (clipped to [0, 255] for uint8)."""
    host = x.asnumpy()
    out = host.astype(np.float32) * alpha + other * (1.0 - alpha)
    if host.dtype == np.uint8:
        out = np.clip(np.rint(out), 0, 255)
    return nd.array(out.astype(host.dtype), dtype=host.dtype)


def _gray(host):
    return (host.astype(np.float32) * _GRAY).sum(axis=-1, keepdims=True)


def _brightness(x, alpha):
    return _blend(x, 0.0, alpha)


def _contrast(x, alpha):
    return _blend(x, float(_gray(x.asnumpy()).mean()), alpha)


def _saturation(x, alpha):
    return _blend(x, _gray(x.asnumpy()), alpha)


def _hue(x, alpha):
    """Rotates hue by (alpha - 1) of a turn in YIQ space (MXNet's hue jitter)."""
    host = x.asnumpy()
    theta = (alpha - 1.0) * np.pi
    u, w = np.cos(theta), np.sin(theta)
    bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
    tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321],
                     [0.211, -0.523, 0.311]])
    ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])
    t = np.dot(np.dot(ityiq, bt), tyiq).T.astype(np.float32)
    out = np.dot(host.astype(np.float32), t)
    if host.dtype == np.uint8:
        out = np.clip(np.rint(out), 0, 255)
    return nd.array(out.astype(host.dtype), dtype=host.dtype)


class _Jitter(Block):
    def __init__(self, amount, apply, what):
        super(_Jitter, self).__init__()
        if amount < 0:
            raise ValueError("%s must be non-negative, got %r" % (what, amount))
        self._args = (max(0.0, 1.0 - amount), 1.0 + amount)
        self._apply = apply

    def forward(self, x):
        return self._apply(x, _factor(*self._args))


class RandomBrightness(_Jitter):
    """Scales pixel values by a factor drawn from [max(0, 1 - brightness), 1 + brightness]."""

    def __init__(self, brightness):
        super(RandomBrightness, self).__init__(brightness, _brightness, "brightness")


class RandomContrast(_Jitter):
    """Blends with the image's mean gray level by a factor drawn from
    [max(0, 1 - contrast), 1 + contrast]."""

    def __init__(self, contrast):
        super(RandomContrast, self).__init__(contrast, _contrast, "contrast")


class RandomSaturation(_Jitter):
    """Blends with each pixel's gray level by a factor drawn from
    [max(0, 1 - saturation), 1 + saturation]."""

    def __init__(self, saturation):
        super(RandomSaturation, self).__init__(saturation, _saturation, "saturation")


class RandomHue(_Jitter):
    """Rotates the hue by a factor drawn from [max(0, 1 - hue), 1 + hue]."""

    def __init__(self, hue):
        super(RandomHue, self).__init__(hue, _hue, "hue")


class RandomColorJitter(Block):
    """Random brightness, contrast, saturation and hue jitters (each only when its amount is
    non-zero), applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super(RandomColorJitter, self).__init__()
        self._jitters = [cls(amount) for cls, amount in
                         ((RandomBrightness, brightness), (RandomContrast, contrast),
                          (RandomSaturation, saturation), (RandomHue, hue)) if amount]

    def forward(self, x):
        order = list(self._jitters)
        random.shuffle(order)
        for jitter in order:
            x = jitter(x)
        return x


# ImageNet's RGB principal components (AlexNet-style lighting noise).
_EIGVAL = np.array([55.46, 4.794, 1.148], dtype=np.float32)
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]], dtype=np.float32)


class RandomLighting(Block):
    """Adds AlexNet's PCA lighting noise: per channel, eigvec . (alpha * eigval) with alpha
    drawn from N(0, alpha_std)."""

    def __init__(self, alpha):
        super(RandomLighting, self).__init__()
        self._alpha = float(alpha)

    def forward(self, x):
        alpha = np.random.normal(0, self._alpha, size=(3,)).astype(np.float32)
        rgb = np.dot(_EIGVEC * alpha, _EIGVAL)
        host = x.asnumpy()
        out = host.astype(np.float32) + rgb
        if host.dtype == np.uint8:
            out = np.clip(np.rint(out), 0, 255)
        return nd.array(out.astype(host.dtype), dtype=host.dtype)


class RandomApply(Sequential):
    """Applies `transforms` (a Block) with probability p, else passes the input through."""

    def __init__(self, transforms, p=0.5):
        super(RandomApply, self).__init__()
        if not 0 <= p <= 1:
            raise ValueError("RandomApply: p must be in [0, 1], got %r" % (p,))
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)
