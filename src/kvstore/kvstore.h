// Key-value stores for data-parallel training (MXNet's KVStore, docs/kvstore.md).
//
// `local` and `device` keep the values in this process; `dist_sync`, `dist_async` and
// `dist_device_sync` keep them on server processes of a launched MPI job (dist.cc). Every push and
// pull is an engine operation with the right dependencies on its arrays: a pull into `out` writes
// out, so out.wait_to_read() (asnumpy) waits for it, exactly as in MXNet.
//
// Keys are ints; string keys are mapped to ints in the order they are first initialised
// (key_of), which is the same on every worker when every worker initialises the same keys in the
// same order, as MXNet requires.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nanomx/ndarray.h"

namespace nanomx::kvstore {

// updater(key, merged pushed value, stored value): writes the new value into *stored (through
// engine operations). MXNet's Updater; the optimizer's update operators run in it.
using Updater = std::function<void(int key, const NDArray& recv, NDArray* stored)>;
// controller(command id, body): a server's handler of commands other than the built-in ones
// (MXNet's kController = 0 carries the pickled optimizer).
using Controller = std::function<void(int command, const std::string& body)>;

// MXNet's command ids sent to servers (docs/kvstore.md, "How the distributed store works").
enum Command : int {
  kController = 0,
  kSetMultiPrecision = 1,
  kStopServer = 2,
  kSyncMode = 3,
  kSetGradientCompression = 4,
  kSetProfilerParams = 5,
};

class KVStore {
 public:
  // Chooses by substring as MXNet: "dist" → the distributed store (sync unless the name holds
  // "_async"), anything else → a local store. The name is lower-cased first.
  static std::unique_ptr<KVStore> create(std::string_view type);
  virtual ~KVStore() = default;

  const std::string& type() const { return type_; }

  // keys[i] ↔ values[i]. init refuses a key initialised before; push and pull refuse a key not
  // initialised, and a value or output whose shape or dtype differs from the initialised one.
  // Several values for one key in one push are summed first.
  virtual void init(std::span<const int> keys, std::span<const NDArray> values) = 0;
  virtual void push(std::span<const int> keys, std::span<const NDArray> values, int priority) = 0;
  virtual void pull(std::span<const int> keys, std::span<const NDArray> outs, int priority) = 0;

  // Local stores apply it to every push; a dist store installs it on a server (run_server).
  virtual void set_updater(Updater updater) { updater_ = std::move(updater); }
  virtual int rank() const { return 0; }
  virtual int num_workers() const { return 1; }
  virtual int num_servers() const { return 0; }
  virtual bool is_distributed() const { return false; }
  virtual void barrier() {}
  // Blocks until every server replied; a server's error comes back as nanomx::Error.
  virtual void send_command_to_servers(int command, const std::string& body);
  // The server loop of a dist store on a server process: returns when the workers finished.
  virtual void run_server(Controller controller);

  // The int key of a string key: a new one (create) or the existing one; throws "key w doesn't
  // exist" for an unknown name when !create.
  int key_of(const std::string& name, bool create);
  // "key 3" or "key 'w'", for error messages.
  std::string describe(int key) const;

 protected:
  explicit KVStore(std::string type) : type_(std::move(type)) {}
  // One entry per distinct key, in first-appearance order, with every value given for it.
  static std::vector<std::pair<int, std::vector<NDArray>>> group(std::span<const int> keys,
                                                                 std::span<const NDArray> values,
                                                                 const char* what);
  // For init, after group: throws "duplicate init of <key>" when a key came twice or
  // `initialised(key)` says it was initialised before.
  void check_new_keys(const std::vector<std::pair<int, std::vector<NDArray>>>& groups,
                      const std::function<bool(int key)>& initialised) const;
  // Throws naming the key when `value` differs in shape or dtype from the initialised one.
  void check_like(int key, const NDArray& value, const Shape& shape, DType dtype,
                  const char* what) const;
  // out = sum(values) as one engine operation (a copy for one value).
  static void sum_into(const std::vector<NDArray>& values, const NDArray& out, const char* name);

  Updater updater_;

 private:
  std::string type_;
  mutable std::mutex keys_mutex_;
  std::unordered_map<std::string, int> str_to_int_;
  std::unordered_map<int, std::string> int_to_str_;
};

// The distributed store (dist.cc); nullptr-free: throws with launch instructions when this
// process is not part of a launched job.
std::unique_ptr<KVStore> create_dist(std::string type, bool sync);
// Ends the distributed job from this process (a worker: waits for its work, meets the other
// workers, rank 0 stops the servers; then MPI is finalised). Called at exit; a no-op when no
// dist store was created. clean=false (the process is failing) skips all of it.
void shutdown_dist(bool clean);

// The role of this process from DMLC_ROLE (unset → worker): "worker", "server" or "scheduler".
std::string role_from_env();

}  // namespace nanomx::kvstore
