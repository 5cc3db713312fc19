"""AlexNet (Krizhevsky, "One weird trick for parallelizing convolutional neural networks"),
as MXNet 1.9.1's model zoo builds it (parameter names alexnet0_conv0_weight, ...,
alexnet0_dense2_weight). Expects 224x224 inputs."""
from ....context import cpu
from ...block import HybridBlock
from ... import nn

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    """Five convolutions (three max poolings) and three dense layers; classes outputs."""

    def __init__(self, classes=1000, **kwargs):
        super(AlexNet, self).__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                self.features.add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2,
                                            activation="relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                for channels in (384, 256, 256):
                    self.features.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                                activation="relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                for _ in range(2):
                    self.features.add(nn.Dense(4096, activation="relu"))
                    self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=cpu(), root=None, **kwargs):
    """AlexNet; pretrained loads MXNet's ImageNet parameters from `root`
    (model_store.get_model_file, nothing is downloaded) onto ctx."""
    net = AlexNet(**kwargs)
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file("alexnet", root=root), ctx=ctx)
    return net
