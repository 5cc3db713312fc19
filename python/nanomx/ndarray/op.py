"""Operator functions with public names (mx.nd.sum, mx.nd.dot, ...), generated at import from
the operators nanomx registers (see register.py)."""
__all__ = []
