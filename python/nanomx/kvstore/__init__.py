"""Key-value stores for data-parallel training (MXNet's ``mx.kv``; docs/kvstore.md)."""
from .kvstore import KVStore, create  # noqa: F401
from .kvstore_server import KVStoreServer  # noqa: F401
