"""Shape arguments: a shape given as an int or a sequence, normalised, and the size of a shape."""
import numbers
import operator


def _as_shape(shape, what="shape"):
    """A shape as a tuple of non-negative ints (an int is a 1-D shape)."""
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError("%s must be an int or a tuple of ints, got %r" % (what, shape)) from None
    if any(d < 0 for d in dims):
        raise ValueError("%s must not have negative dimensions, got %r" % (what, dims))
    return dims


def _prod(shape):
    size = 1
    for d in shape:
        size *= d
    return size
