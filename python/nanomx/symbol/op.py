"""Symbol functions with public names (mx.sym.FullyConnected, mx.sym.dot, ...), generated at
import from the operators nanomx registers (see register.py)."""
__all__ = []
