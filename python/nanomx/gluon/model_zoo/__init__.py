"""mx.gluon.model_zoo: predefined vision models (MXNet 1.x's architectures and parameter
names) and the local store of their pretrained parameters."""
from . import model_store  # noqa: F401
from . import vision  # noqa: F401
