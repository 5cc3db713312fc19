"""mx.gluon: MXNet 1.9.1's imperative/hybrid neural-network API (the 1.x one: prefixes,
ParameterDict, hybrid_forward(F, ...), ctx=).

Parameter / Constant / ParameterDict (parameter.py), Block / HybridBlock / SymbolBlock
(block.py; hybridized calls run through nanomx's executor, _cached_graph.py), Trainer
(trainer.py), losses (loss.py), helpers (utils.py), layers (nn), data loading (data) and the
vision model zoo (model_zoo).
"""
from .parameter import Parameter, Constant, ParameterDict, DeferredInitializationError  # noqa: F401
from .block import Block, HybridBlock, SymbolBlock  # noqa: F401
from . import nn  # noqa: F401
from . import utils  # noqa: F401
from . import loss  # noqa: F401
from .trainer import Trainer  # noqa: F401
from . import data  # noqa: F401
from . import model_zoo  # noqa: F401
