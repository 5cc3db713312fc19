"""DenseNet-121/161/169/201 (Huang et al., "Densely Connected Convolutional Networks"), as
MXNet 1.9.1's model zoo builds them (parameter names densenet0_conv0_weight,
densenet0_stage1_batchnorm0_gamma, ...). The features end with 7x7 average pooling: inputs
are 224x224."""
from ....context import cpu
from ...block import HybridBlock
from ... import nn
from ._concurrent import HybridConcurrent, Identity

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _dense_layer(growth_rate, bn_size, dropout):
    """BN-ReLU-conv1x1 (bn_size * growth_rate) - BN-ReLU-conv3x3 (growth_rate), concatenated
    after its input."""
    new_features = nn.HybridSequential(prefix="")
    new_features.add(nn.BatchNorm())
    new_features.add(nn.Activation("relu"))
    new_features.add(nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False))
    new_features.add(nn.BatchNorm())
    new_features.add(nn.Activation("relu"))
    new_features.add(nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new_features.add(nn.Dropout(dropout))
    out = HybridConcurrent(axis=1, prefix="")
    out.add(Identity())
    out.add(new_features)
    return out


def _dense_block(num_layers, bn_size, growth_rate, dropout, stage_index):
    out = nn.HybridSequential(prefix="stage%d_" % stage_index)
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_dense_layer(growth_rate, bn_size, dropout))
    return out


def _transition(num_output_features):
    """BN-ReLU-conv1x1 then 2x2 average pooling between dense blocks."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.BatchNorm())
    out.add(nn.Activation("relu"))
    out.add(nn.Conv2D(num_output_features, kernel_size=1, use_bias=False))
    out.add(nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """num_init_features: stem channels; growth_rate: channels each dense layer adds;
    block_config: dense layers per block; bn_size: bottleneck width factor; dropout: rate
    after each dense layer (0: none); classes: outputs."""

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0,
                 classes=1000, **kwargs):
        super(DenseNet, self).__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2,
                                        padding=3, use_bias=False))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation("relu"))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                num_features += num_layers * growth_rate
                if i != len(block_config) - 1:
                    num_features //= 2
                    self.features.add(_transition(num_features))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation("relu"))
            self.features.add(nn.AvgPool2D(pool_size=7))
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth: (stem channels, growth rate, dense layers per block)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """DenseNet with `num_layers` (121, 161, 169, 201) layers; pretrained loads MXNet's
    ImageNet parameters from `root` (nothing is downloaded) onto ctx."""
    if num_layers not in densenet_spec:
        raise ValueError("Invalid number of layers: %r. Options are %s"
                         % (num_layers, sorted(densenet_spec)))
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file("densenet%d" % num_layers, root=root), ctx=ctx)
    return net


def densenet121(**kwargs):
    """DenseNet-121 (see get_densenet)."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs):
    """DenseNet-161 (see get_densenet)."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs):
    """DenseNet-169 (see get_densenet)."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs):
    """DenseNet-201 (see get_densenet)."""
    return get_densenet(201, **kwargs)
