"""nanomx: a profiler-first array runtime with MXNet 1.x's Python API.

    import nanomx as mx
    mx.profiler.set_config(profile_all=True, filename='profile.json')
    mx.profiler.set_state('run')
    x = mx.nd.ones((1000, 500)) * 2
    mx.profiler.set_state('stop')
"""
from . import base
from .base import MXNetError, __version__  # noqa: F401
from . import context
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus  # noqa: F401
from . import ndarray
from . import ndarray as nd  # noqa: F401
from . import profiler, random  # noqa: F401
from . import attribute, name  # noqa: F401,E402
from . import symbol  # noqa: E402
from . import symbol as sym  # noqa: F401,E402
from . import initializer  # noqa: E402
from . import initializer as init  # noqa: F401,E402
from . import lr_scheduler, optimizer  # noqa: F401,E402
from . import optimizer as opt  # noqa: F401,E402
from . import io, metric  # noqa: F401,E402
from . import model, callback  # noqa: F401,E402
from . import module  # noqa: E402
from . import module as mod  # noqa: F401,E402
from . import autograd  # noqa: F401,E402
from . import operator  # noqa: F401,E402
from . import executor  # noqa: F401,E402
from . import recordio  # noqa: F401,E402
from . import image  # noqa: E402
from . import image as img  # noqa: F401,E402
from . import kvstore  # noqa: E402
from . import kvstore as kv  # noqa: F401,E402
from . import gluon  # noqa: F401,E402
from . import test_utils, util, runtime  # noqa: F401,E402
from .util import is_np_shape, set_np_shape, np_shape, use_np_shape  # noqa: F401,E402
from .util import is_np_array, np_array, use_np_array, use_np  # noqa: F401,E402

# A server process of a distributed job (DMLC_ROLE=server) serves here and exits: the importing
# script's body never runs, as in MXNet.
kvstore.kvstore_server._init_kvstore_server_module()
