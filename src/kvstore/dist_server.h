// The server side of the distributed KVStore (MXNet's KVStoreDistServer): the loop that
// run_server runs on a server process (dist_server.cc).
#pragma once

#include "kvstore/dist_connection.h"
#include "kvstore/kvstore.h"

namespace nanomx::kvstore::dist {

// Handles the workers' requests (init, push, pull, commands, barriers) on the calling thread
// until a worker sends kStopServer, then waits for the engine's work. `updater` applies each
// round's merged push (a plain copy when empty); `controller` handles the commands that are not
// built in.
void run_server_loop(Connection& connection, Updater& updater, Controller controller);

}  // namespace nanomx::kvstore::dist
