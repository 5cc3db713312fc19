"""mx.ndarray (alias mx.nd): NDArray, its creation functions and one function per operator."""
from . import _internal, op
from .ndarray import *  # noqa: F401,F403
from .ndarray import NDArray
from . import register as _register

_register.populate()
from .op import *  # noqa: E402,F401,F403
# The hand-written functions win over generated ones of the same name.
from .ndarray import *  # noqa: E402,F401,F403
from . import random  # noqa: E402,F401
from .custom import Custom  # noqa: E402,F401
