"""Inception V3 (Szegedy et al., "Rethinking the Inception Architecture for Computer
Vision"), as MXNet 1.9.1's model zoo builds it (parameter names inception30_conv0_weight,
inception30_A1_conv0_weight, ...; the blocks are named A1_ ... E2_). Expects 299x299 inputs
(the features end with 8x8 average pooling)."""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ._concurrent import HybridConcurrent

__all__ = ["Inception3", "inception_v3"]


def _basic_conv(**kwargs):
    """Convolution (no bias), BatchNorm (epsilon 0.001), ReLU."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(use_bias=False, **kwargs))
    out.add(nn.BatchNorm(epsilon=0.001))
    out.add(nn.Activation("relu"))
    return out


_SETTING_NAMES = ("channels", "kernel_size", "strides", "padding")


def _branch(use_pool, *conv_settings):
    """An optional pooling ('avg': 3x3/1 padded, 'max': 3x3/2) followed by basic
    convolutions, each given as (channels, kernel_size, strides, padding) with None for the
    default."""
    out = nn.HybridSequential(prefix="")
    if use_pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif use_pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in conv_settings:
        kwargs = {name: value for name, value in zip(_SETTING_NAMES, setting)
                  if value is not None}
        out.add(_basic_conv(**kwargs))
    return out


def _make_A(pool_features, prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_branch(None, (64, 1, None, None)))
        out.add(_branch(None, (48, 1, None, None), (64, 5, None, 2)))
        out.add(_branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)))
        out.add(_branch("avg", (pool_features, 1, None, None)))
    return out


def _make_B(prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_branch(None, (384, 3, 2, None)))
        out.add(_branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)))
        out.add(_branch("max"))
    return out


def _make_C(channels_7x7, prefix):
    c7 = channels_7x7
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_branch(None, (192, 1, None, None)))
        out.add(_branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0))))
        out.add(_branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                        (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                        (192, (1, 7), None, (0, 3))))
        out.add(_branch("avg", (192, 1, None, None)))
    return out


def _make_D(prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_branch(None, (192, 1, None, None), (320, 3, 2, None)))
        out.add(_branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0)), (192, 3, 2, None)))
        out.add(_branch("max"))
    return out


def _make_E(prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_branch(None, (320, 1, None, None)))

        branch_3x3 = nn.HybridSequential(prefix="")
        out.add(branch_3x3)
        branch_3x3.add(_branch(None, (384, 1, None, None)))
        split_3x3 = HybridConcurrent(axis=1, prefix="")
        split_3x3.add(_branch(None, (384, (1, 3), None, (0, 1))))
        split_3x3.add(_branch(None, (384, (3, 1), None, (1, 0))))
        branch_3x3.add(split_3x3)

        branch_3x3dbl = nn.HybridSequential(prefix="")
        out.add(branch_3x3dbl)
        branch_3x3dbl.add(_branch(None, (448, 1, None, None), (384, 3, None, 1)))
        split_3x3dbl = HybridConcurrent(axis=1, prefix="")
        branch_3x3dbl.add(split_3x3dbl)
        split_3x3dbl.add(_branch(None, (384, (1, 3), None, (0, 1))))
        split_3x3dbl.add(_branch(None, (384, (3, 1), None, (1, 0))))

        out.add(_branch("avg", (192, 1, None, None)))
    return out


class Inception3(HybridBlock):
    """Inception V3's stem, A1-A3, B, C1-C4, D, E1-E2 blocks, 8x8 average pooling, dropout and
    the classes-wide dense output."""

    def __init__(self, classes=1000, **kwargs):
        super(Inception3, self).__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_basic_conv(channels=32, kernel_size=3, strides=2))
            self.features.add(_basic_conv(channels=32, kernel_size=3))
            self.features.add(_basic_conv(channels=64, kernel_size=3, padding=1))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_basic_conv(channels=80, kernel_size=1))
            self.features.add(_basic_conv(channels=192, kernel_size=3))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_make_A(32, "A1_"))
            self.features.add(_make_A(64, "A2_"))
            self.features.add(_make_A(64, "A3_"))
            self.features.add(_make_B("B_"))
            self.features.add(_make_C(128, "C1_"))
            self.features.add(_make_C(160, "C2_"))
            self.features.add(_make_C(160, "C3_"))
            self.features.add(_make_C(192, "C4_"))
            self.features.add(_make_D("D_"))
            self.features.add(_make_E("E1_"))
            self.features.add(_make_E("E2_"))
            self.features.add(nn.AvgPool2D(pool_size=8))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=cpu(), root=None, **kwargs):
    """Inception V3; pretrained loads MXNet's ImageNet parameters from `root` (nothing is
    downloaded) onto ctx."""
    net = Inception3(**kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file("inceptionv3", root=root), ctx=ctx)
    return net
