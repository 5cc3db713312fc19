"""ResNet V1 (He et al., "Deep Residual Learning for Image Recognition") and V2 (He et al.,
"Identity Mappings in Deep Residual Networks"), as MXNet 1.9.1's model zoo builds them.

The block structure, the order in which layers are created and the name scopes are MXNet's,
so parameter names match its pretrained files: resnetv10_conv0_weight,
resnetv10_stage1_conv0_weight, resnetv10_stage1_batchnorm0_gamma, resnetv10_dense0_weight
(resnetv2<k>_ for V2).
"""
from ....context import cpu
from ...block import HybridBlock
from ... import nn

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1",
           "BottleneckV2", "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1",
           "resnet152_v1", "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2",
           "resnet152_v2", "get_resnet"]


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _shortcut_v1(channels, stride, in_channels):
    """The projection shortcut of a V1 block: 1x1 convolution and BatchNorm."""
    shortcut = nn.HybridSequential(prefix="")
    shortcut.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                           in_channels=in_channels))
    shortcut.add(nn.BatchNorm())
    return shortcut


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with BatchNorm, ReLU after the residual addition (ResNet-18/34).

    channels: output channels. stride: of the first convolution. downsample: project the
    shortcut with a strided 1x1 convolution. in_channels: 0 infers it."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super(BasicBlockV1, self).__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(_conv3x3(channels, stride, in_channels))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation("relu"))
        self.body.add(_conv3x3(channels, 1, channels))
        self.body.add(nn.BatchNorm())
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        shortcut = self.downsample(x) if self.downsample else x
        return F.Activation(shortcut + self.body(x), act_type="relu")


class BottleneckV1(HybridBlock):
    """1x1 (channels / 4, strided) -> 3x3 -> 1x1 (channels) with BatchNorm (ResNet-50 and
    deeper); arguments as BasicBlockV1's."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super(BottleneckV1, self).__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation("relu"))
        self.body.add(_conv3x3(channels // 4, 1, channels // 4))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation("relu"))
        self.body.add(nn.Conv2D(channels, kernel_size=1, strides=1))
        self.body.add(nn.BatchNorm())
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        shortcut = self.downsample(x) if self.downsample else x
        return F.Activation(self.body(x) + shortcut, act_type="relu")


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block: BN-ReLU-conv3x3 twice; the projection shortcut (a 1x1
    convolution) reads the first pre-activation."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super(BasicBlockV2, self).__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        if downsample:
            self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False,
                                        in_channels=in_channels)
        else:
            self.downsample = None

    def hybrid_forward(self, F, x):
        shortcut = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample:
            shortcut = self.downsample(x)
        x = self.conv1(x)
        x = F.Activation(self.bn2(x), act_type="relu")
        return self.conv2(x) + shortcut


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck: BN-ReLU before each of 1x1, 3x3 (strided), 1x1."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super(BottleneckV2, self).__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        if downsample:
            self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False,
                                        in_channels=in_channels)
        else:
            self.downsample = None

    def hybrid_forward(self, F, x):
        shortcut = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample:
            shortcut = self.downsample(x)
        x = self.conv1(x)
        x = F.Activation(self.bn2(x), act_type="relu")
        x = self.conv2(x)
        x = F.Activation(self.bn3(x), act_type="relu")
        return self.conv3(x) + shortcut


def _make_stage(block, num_blocks, channels, stride, stage_index, in_channels):
    """stage<k>_: the first block changes channels/stride (with a projection when the
    channels change), the others keep them."""
    stage = nn.HybridSequential(prefix="stage%d_" % stage_index)
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                        prefix=""))
        for _ in range(num_blocks - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


class ResNetV1(HybridBlock):
    """ResNet V1: block (BasicBlockV1 or BottleneckV1), layers (blocks per stage), channels
    (stem output, then each stage's), classes, thumbnail (a 3x3 stem for 32x32 inputs instead
    of 7x7/2 convolution and 3x3/2 max pooling)."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super(ResNetV1, self).__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise AssertionError("ResNetV1: channels needs one entry more than layers")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False))
                self.features.add(nn.BatchNorm())
                self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(3, 2, 1))
            for i, num_blocks in enumerate(layers):
                self.features.add(_make_stage(block, num_blocks, channels[i + 1],
                                              1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet V2 (pre-activation): arguments as ResNetV1's. The input first goes through a
    BatchNorm without scale and shift, and the features end with BN-ReLU."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super(ResNetV2, self).__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise AssertionError("ResNetV2: channels needs one entry more than layers")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False))
                self.features.add(nn.BatchNorm())
                self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(3, 2, 1))
            in_channels = channels[0]
            for i, num_blocks in enumerate(layers):
                self.features.add(_make_stage(block, num_blocks, channels[i + 1],
                                              1 if i == 0 else 2, i + 1, in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation("relu"))
            self.features.add(nn.GlobalAvgPool2D())
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth: (block kind, blocks per stage, channels of the stem and of each stage)
resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}

resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
                         {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """ResNet `version` (1 or 2) with `num_layers` (18, 34, 50, 101, 152) layers.

    pretrained loads MXNet's ImageNet parameters from `root` (model_store.get_model_file;
    nothing is downloaded) onto ctx. Other keywords (classes, thumbnail, prefix) go to the
    network's constructor."""
    if num_layers not in resnet_spec:
        raise AssertionError("Invalid number of layers: %d. Options are %s"
                             % (num_layers, str(sorted(resnet_spec))))
    if version not in (1, 2):
        raise AssertionError("Invalid resnet version: %d. Options are 1 and 2." % version)
    block_type, layers, channels = resnet_spec[num_layers]
    net_class = resnet_net_versions[version - 1]
    block_class = resnet_block_versions[version - 1][block_type]
    net = net_class(block_class, layers, channels, **kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file("resnet%d_v%d" % (num_layers, version), root=root),
                            ctx=ctx)
    return net


def resnet18_v1(**kwargs):
    """ResNet-18 V1 (see get_resnet)."""
    return get_resnet(1, 18, **kwargs)


def resnet34_v1(**kwargs):
    """ResNet-34 V1 (see get_resnet)."""
    return get_resnet(1, 34, **kwargs)


def resnet50_v1(**kwargs):
    """ResNet-50 V1 (see get_resnet)."""
    return get_resnet(1, 50, **kwargs)


def resnet101_v1(**kwargs):
    """ResNet-101 V1 (see get_resnet)."""
    return get_resnet(1, 101, **kwargs)


def resnet152_v1(**kwargs):
    """ResNet-152 V1 (see get_resnet)."""
    return get_resnet(1, 152, **kwargs)


def resnet18_v2(**kwargs):
    """ResNet-18 V2 (see get_resnet)."""
    return get_resnet(2, 18, **kwargs)


def resnet34_v2(**kwargs):
    """ResNet-34 V2 (see get_resnet)."""
    return get_resnet(2, 34, **kwargs)


def resnet50_v2(**kwargs):
    """ResNet-50 V2 (see get_resnet)."""
    return get_resnet(2, 50, **kwargs)


def resnet101_v2(**kwargs):
    """ResNet-101 V2 (see get_resnet)."""
    return get_resnet(2, 101, **kwargs)


def resnet152_v2(**kwargs):
    """ResNet-152 V2 (see get_resnet)."""
    return get_resnet(2, 152, **kwargs)
