"""mx.nd.Custom: calls a custom operator registered with mx.operator.register."""
from .ndarray import NDArray, _invoke, _op_handle

__all__ = ["Custom"]


def Custom(*data, op_type=None, out=None, name=None, **kwargs):  # noqa: N802 (MXNet's name)
    """Custom(*data, op_type='name', **kwargs): every keyword argument reaches the operator's
    CustomOpProp constructor as a string (scale=2 -> Prop(scale='2'))."""
    del name  # MXNet's, unused imperatively
    for i, value in enumerate(data):
        if not isinstance(value, NDArray):
            raise TypeError("Custom(): argument 'data[%d]' must be an NDArray, got %s"
                            % (i, type(value).__name__))
    keys, vals = [], []
    if op_type is not None:
        keys.append("op_type")
        vals.append(str(op_type))
    for key, value in kwargs.items():
        keys.append(key)
        vals.append(str(value))
    return _invoke(_op_handle("Custom"), data, keys, vals, out)
