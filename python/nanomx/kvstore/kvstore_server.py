"""The server role (MXNet's kvstore_server.py): ``import nanomx`` on a process launched with
DMLC_ROLE=server serves the workers' keys until they finish, then exits; the script body never
runs (docs/kvstore.md)."""
import logging
import os
import pickle
import sys

from ..base import _LIB


class KVStoreServer(object):
    """Runs the server loop of a dist kvstore; commands from the workers reach the controller."""

    def __init__(self, kvstore):
        self.kvstore = kvstore
        self.init_logging = False

    def _controller(self):
        def server_controller(cmd_id, cmd_body):
            if not self.init_logging:
                head = "%(asctime)-15s Server[" + str(self.kvstore.rank) + "] %(message)s"
                logging.basicConfig(level=logging.DEBUG, format=head)
                self.init_logging = True
            if cmd_id == 0:
                optimizer = pickle.loads(cmd_body)
                self.kvstore.set_optimizer(optimizer)
            else:
                print("server %d, unknown command (%d, %s)" % (self.kvstore.rank, cmd_id,
                                                             cmd_body))
        return server_controller

    def run(self):
        """Serves until worker rank 0 stops the servers."""
        _LIB.kv_run_server(self.kvstore.handle, self._controller())


def _init_kvstore_server_module():
    role = os.environ.get("DMLC_ROLE", "worker")
    if role in ("", "worker"):
        return
    from .kvstore import create
    kvstore = create("dist")
    KVStoreServer(kvstore).run()
    _LIB.kv_shutdown(True)
    sys.exit()
