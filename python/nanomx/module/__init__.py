"""mx.mod / mx.module: MXNet 1.x's Module API over one executor (one context)."""
from .base_module import BaseModule  # noqa: F401
from .module import Module  # noqa: F401

__all__ = ["BaseModule", "Module"]
