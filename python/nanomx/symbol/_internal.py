"""Symbol functions whose names start with an underscore (mx.sym._internal._plus_scalar, ...),
generated at import from the operators nanomx registers (see register.py)."""
__all__ = []
