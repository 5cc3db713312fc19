"""mx.symbol (alias mx.sym): symbolic graphs, Variable/var, Group, load/load_json and one symbol
function per operator."""
from . import _internal, op
from .symbol import *  # noqa: F401,F403
from .symbol import Symbol  # noqa: F401
from . import register as _register

_register.populate()
from .op import *  # noqa: E402,F401,F403
from .symbol import *  # noqa: E402,F401,F403
from .. import _symbol_fluent  # noqa: E402,F401 (attaches Symbol's fluent methods)
