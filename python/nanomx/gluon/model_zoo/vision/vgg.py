"""VGG (Simonyan and Zisserman, "Very Deep Convolutional Networks for Large-Scale Image
Recognition"), with or without BatchNorm, as MXNet 1.9.1's model zoo builds it (parameter
names vgg0_conv0_weight, vgg0_batchnorm0_gamma, vgg0_dense0_weight, ...). Expects 224x224
inputs (the first dense layer is 512 * 7 * 7 wide)."""
from ....context import cpu
from ....initializer import Xavier
from ...block import HybridBlock
from ... import nn

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
           "vgg19_bn", "get_vgg"]


class VGG(HybridBlock):
    """layers: 3x3 convolutions per block; filters: their channels per block (each block
    ends with 2x2 max pooling); then two 4096-wide dense layers with dropout and the
    classes-wide output. batch_norm adds BatchNorm after every convolution."""

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super(VGG, self).__init__(**kwargs)
        if len(layers) != len(filters):
            raise AssertionError("VGG: layers and filters must have the same length")
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu",
                                           weight_initializer="normal",
                                           bias_initializer="zeros"))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal",
                                   bias_initializer="zeros")

    def _make_features(self, layers, filters, batch_norm):
        features = nn.HybridSequential(prefix="")
        for num_convs, channels in zip(layers, filters):
            for _ in range(num_convs):
                features.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                       weight_initializer=Xavier(rnd_type="gaussian",
                                                                 factor_type="out",
                                                                 magnitude=2),
                                       bias_initializer="zeros"))
                if batch_norm:
                    features.add(nn.BatchNorm())
                features.add(nn.Activation("relu"))
            features.add(nn.MaxPool2D(strides=2))
        return features

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth: (convolutions per block, channels per block)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """VGG with `num_layers` (11, 13, 16, 19) layers; batch_norm=True for the _bn variants.
    pretrained loads MXNet's ImageNet parameters from `root` (nothing is downloaded)."""
    if num_layers not in vgg_spec:
        raise ValueError("Invalid number of layers: %r. Options are %s"
                         % (num_layers, sorted(vgg_spec)))
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        from ..model_store import get_model_file
        suffix = "_bn" if kwargs.get("batch_norm") else ""
        net.load_parameters(get_model_file("vgg%d%s" % (num_layers, suffix), root=root),
                            ctx=ctx)
    return net


def vgg11(**kwargs):
    """VGG-11 (see get_vgg)."""
    return get_vgg(11, **kwargs)


def vgg13(**kwargs):
    """VGG-13 (see get_vgg)."""
    return get_vgg(13, **kwargs)


def vgg16(**kwargs):
    """VGG-16 (see get_vgg)."""
    return get_vgg(16, **kwargs)


def vgg19(**kwargs):
    """VGG-19 (see get_vgg)."""
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs):
    """VGG-11 with BatchNorm (see get_vgg)."""
    kwargs["batch_norm"] = True
    return get_vgg(11, **kwargs)


def vgg13_bn(**kwargs):
    """VGG-13 with BatchNorm (see get_vgg)."""
    kwargs["batch_norm"] = True
    return get_vgg(13, **kwargs)


def vgg16_bn(**kwargs):
    """VGG-16 with BatchNorm (see get_vgg)."""
    kwargs["batch_norm"] = True
    return get_vgg(16, **kwargs)


def vgg19_bn(**kwargs):
    """VGG-19 with BatchNorm (see get_vgg)."""
    kwargs["batch_norm"] = True
    return get_vgg(19, **kwargs)
