"""mx.optimizer (alias mx.opt): MXNet 1.x's optimizers, their registry and the Updater."""
from . import optimizer
from .optimizer import (SGD, Adam, Optimizer, Updater, ccSGD, create, get_updater,  # noqa: F401
                        register)

__all__ = optimizer.__all__
