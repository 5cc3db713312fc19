"""mx.random: samples (uniform, normal, randint, ...) and the generator's seed."""
import numbers

from .base import _LIB
from .ndarray.random import (exponential, gamma, multinomial, normal, poisson,  # noqa: F401
                             randint, randn, shuffle, uniform)


def seed(seed_state, ctx="all"):
    """Seeds the generator behind uniform/normal (ordered with pending random operators)."""
    if not isinstance(seed_state, numbers.Integral) or isinstance(seed_state, bool):
        raise ValueError("seed_state must be an int, got %r" % (seed_state,))
    if not -2**31 <= int(seed_state) < 2**31:
        raise ValueError("seed_state must fit in a 32-bit int, got %d" % seed_state)
    _LIB.random_seed(int(seed_state))
