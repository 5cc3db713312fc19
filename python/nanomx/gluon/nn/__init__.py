"""mx.gluon.nn: neural-network layers (MXNet 1.x's gluon.nn); Block, HybridBlock and
SymbolBlock are importable from here too, as in MXNet."""
from ..block import *  # noqa: F401,F403
from .basic_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
from .activations import *  # noqa: F401,F403
