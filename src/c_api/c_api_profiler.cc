// The profiler's C functions, with MXNet 1.9.1's names and signatures (docs/mxnet-compat.md#c-api).
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/backend.h"
#include "c_api/c_api_common.h"
#include "c_api/handle_table.h"
#include "nanomx/c_api.h"
#include "nanomx/gpu.h"
#include "nanomx/profiler.h"

namespace prof = nanomx::profiler;

namespace nanomx::c_api {
namespace {

std::atomic<ServerProfilerSender> g_server_sender{nullptr};

enum class ProfileKind : uint32_t { kDomain, kDuration, kCounter };

// What a ProfileHandle points at.
struct ProfileObject {
  ProfileKind kind;
  std::unique_ptr<prof::Domain> domain;
  std::unique_ptr<prof::Duration> duration;
  std::unique_ptr<prof::Counter> counter;
};

// Every handle given out and not destroyed (domains are never destroyed, as MXNet), in a handle
// table (handle_table.h): a stale, made-up or other-kind handle is an error, never a
// dereference. The table is never freed: handles stay usable in exit-time code.
using ProfileTable = HandleTable<ProfileObject, HandleKind::kProfileObject>;
ProfileTable& profile_objects() {
  static auto* table = new ProfileTable;
  return *table;
}

// Runs use(object) with the handle checked. Using a handle while another thread destroys it is
// the caller's error, as with any handle.
template <typename Use>
void with_object(ProfileHandle handle, ProfileKind kind, const char* function, Use&& use) {
  check_not_null(handle, function, "the profile handle");
  static const char* kKindNames[] = {"domain", "task, frame or event", "counter"};
  ProfileObject& object = profile_objects().get(handle, function, "the profile handle");
  NANOMX_CHECK(object.kind == kind)
      << function << ": expected a " << kKindNames[static_cast<int>(kind)] << " handle, got a "
      << kKindNames[static_cast<int>(object.kind)] << " handle";
  use(&object);
}

ProfileHandle keep(std::unique_ptr<ProfileObject> object) {
  return profile_objects().emplace(std::move(*object));
}

std::string checked_name(const char* name, const char* function, const char* what) {
  check_not_null(name, function, what);
  NANOMX_CHECK(name[0] != '\0') << function << ": " << what << " must not be empty";
  return name;
}

void send_to_servers(KVStoreHandle kv, const std::string& body, const char* null_message) {
  NANOMX_CHECK(kv != nullptr) << null_message;
  ServerProfilerSender sender = g_server_sender.load();
  NANOMX_CHECK(sender != nullptr)
      << "profile_process='server' needs a distributed kvstore; this handle has no server "
         "connection";
  sender(kv, body);
}

constexpr const char* kNullConfigKv = "KVStoreHandle passed to profiler is null";
constexpr const char* kNullKv = "Kvstore Handle passed to profiler is null";

}  // namespace

void set_server_profiler_sender(ServerProfilerSender sender) { g_server_sender.store(sender); }

}  // namespace nanomx::c_api

using namespace nanomx::c_api;

int MXSetProcessProfilerConfig(int num_params, const char* const* keys, const char* const* vals,
                               KVStoreHandle kvstoreHandle) {
  NANOMX_API_BEGIN_UNPROFILED();
  NANOMX_CHECK(num_params >= 0) << "MXSetProcessProfilerConfig: num_params is " << num_params
                                << ", expected >= 0";
  if (num_params > 0) {
    check_not_null(keys, "MXSetProcessProfilerConfig", "keys");
    check_not_null(vals, "MXSetProcessProfilerConfig", "vals");
  }
  prof::KeyValues key_values;
  for (int i = 0; i < num_params; ++i) {
    check_not_null(keys[i], "MXSetProcessProfilerConfig", "a key");
    check_not_null(vals[i], "MXSetProcessProfilerConfig", "a value");
    key_values.emplace_back(keys[i], vals[i]);
  }
  prof::Config config = prof::parse_config(key_values);  // validates before any side effect
  if (config.profile_process == prof::ProfileProcess::kServer) {
    std::string body;
    for (const auto& [k, v] : key_values) {
      if (k == "profile_process") continue;
      body += k + ":" + v + ",";
    }
    send_to_servers(kvstoreHandle, body + "0", kNullConfigKv);
  } else {
    prof::apply_config(config);
  }
  NANOMX_API_END();
}

int MXSetProfilerConfig(int num_params, const char* const* keys, const char* const* vals) {
  return MXSetProcessProfilerConfig(num_params, keys, vals, nullptr);
}

int MXSetProcessProfilerState(int state, int profile_process, KVStoreHandle kvStoreHandle) {
  NANOMX_API_BEGIN_UNPROFILED();
  NANOMX_CHECK(state == 0 || state == 1)
      << "MXSetProcessProfilerState: state is " << state << ", expected 0 (stop) or 1 (run)";
  if (profile_process == 1) {
    send_to_servers(kvStoreHandle, std::to_string(state) + "1", kNullKv);
  } else {
    prof::set_state(state == 1 ? prof::State::kRunning : prof::State::kStopped);
  }
  NANOMX_API_END();
}

int MXSetProfilerState(int state) { return MXSetProcessProfilerState(state, 0, nullptr); }

int MXSetProfilerScope(const char* scope) {
  NANOMX_API_BEGIN(MXSetProfilerScope);  // profiled, as MXNet profiles it
  check_not_null(scope, "MXSetProfilerScope", "scope");
  prof::set_scope(scope);
  NANOMX_API_END();
}

int MXDumpProcessProfile(int finished, int profile_process, KVStoreHandle kvStoreHandle) {
  NANOMX_API_BEGIN_UNPROFILED();
  if (profile_process == 1) {
    send_to_servers(kvStoreHandle, std::string(finished ? "1" : "0") + "3", kNullKv);
  } else {
    prof::dump(finished != 0);
    // After the trace, each backend's memory profile (the GPU's, as MXNet's CUDA builds:
    // docs/cuda.md).
    nanomx::for_each_device_backend([](const nanomx::DeviceBackend& backend) {
      if (backend.write_memory_profile != nullptr) {
        backend.write_memory_profile(prof::current_config().gpu_memory_profile_filename_prefix);
      }
    });
  }
  NANOMX_API_END();
}

int MXDumpProfile(int finished) { return MXDumpProcessProfile(finished, 0, nullptr); }

int MXAggregateProfileStatsPrintEx(const char** out_str, int reset, int format, int sort_by,
                                   int ascending) {
  NANOMX_API_BEGIN(MXAggregateProfileStatsPrint);  // profiled, as MXNet profiles it
  static thread_local std::string text;
  check_not_null(out_str, "MXAggregateProfileStatsPrint", "out_str");
  NANOMX_CHECK(format == 0 || format == 1)
      << "Invalid value for parameter format: " << format << " (expected 0 table or 1 json)";
  NANOMX_CHECK(sort_by >= 0 && sort_by <= 4)
      << "Invalid value for parameter sort_by: " << sort_by
      << " (expected 0 total, 1 avg, 2 min, 3 max or 4 count)";
  text = prof::dumps(reset != 0, static_cast<prof::StatsFormat>(format),
                     static_cast<prof::SortBy>(sort_by), ascending != 0);
  *out_str = text.c_str();
  NANOMX_API_END();
}

int MXAggregateProfileStatsPrint(const char** out_str, int reset) {
  return MXAggregateProfileStatsPrintEx(out_str, reset, 0, 0, 0);
}

int MXProcessProfilePause(int paused, int profile_process, KVStoreHandle kvStoreHandle) {
  NANOMX_API_BEGIN_UNPROFILED();
  if (profile_process == 1) {
    send_to_servers(kvStoreHandle, std::string(paused ? "1" : "0") + "2", kNullKv);
  } else if (paused) {
    prof::pause();
  } else {
    prof::resume();
  }
  NANOMX_API_END();
}

int MXProfilePause(int paused) { return MXProcessProfilePause(paused, 0, nullptr); }

int MXProfileStep(const char** out_finished_file) {
  NANOMX_API_BEGIN_UNPROFILED();
  thread_local std::string finished;
  finished = prof::step();
  if (out_finished_file != nullptr) *out_finished_file = finished.c_str();
  NANOMX_API_END();
}

int MXProfileCreateDomain(const char* domain, ProfileHandle* out) {
  NANOMX_API_BEGIN_UNPROFILED();
  std::string name = checked_name(domain, "MXProfileCreateDomain", "the domain name");
  check_not_null(out, "MXProfileCreateDomain", "out");
  auto object = std::make_unique<ProfileObject>();
  object->kind = ProfileKind::kDomain;
  object->domain = std::make_unique<prof::Domain>(name);
  *out = keep(std::move(object));
  NANOMX_API_END();
}

namespace {
template <typename Make>
int create_object(const char* function, ProfileHandle domain, const char* name, const char* what,
                  ProfileHandle* out, ProfileKind kind, Make make) {
  NANOMX_API_BEGIN_UNPROFILED();
  const prof::Domain* d = nullptr;  // domains are never freed, so the pointer stays valid
  if (domain)
    with_object(domain, ProfileKind::kDomain, function,
                [&](ProfileObject* o) { d = o->domain.get(); });
  std::string n = checked_name(name, function, what);
  check_not_null(out, function, "out");
  auto object = std::make_unique<ProfileObject>();
  object->kind = kind;
  make(object.get(), d, n);
  *out = keep(std::move(object));
  NANOMX_API_END();
}
}  // namespace

int MXProfileCreateTask(ProfileHandle domain, const char* task_name, ProfileHandle* out) {
  return create_object("MXProfileCreateTask", domain, task_name, "the task name", out,
                       ProfileKind::kDuration,
                       [](ProfileObject* o, const prof::Domain* d, const std::string& n) {
                         check_not_null(d, "MXProfileCreateTask", "domain");
                         o->duration = std::make_unique<prof::Task>(*d, n);
                       });
}

int MXProfileCreateFrame(ProfileHandle domain, const char* frame_name, ProfileHandle* out) {
  return create_object("MXProfileCreateFrame", domain, frame_name, "the frame name", out,
                       ProfileKind::kDuration,
                       [](ProfileObject* o, const prof::Domain* d, const std::string& n) {
                         nanomx::c_api::check_not_null(d, "MXProfileCreateFrame", "domain");
                         o->duration = std::make_unique<prof::Frame>(*d, n);
                       });
}

int MXProfileCreateEvent(const char* event_name, ProfileHandle* out) {
  return create_object("MXProfileCreateEvent", nullptr, event_name, "the event name", out,
                       ProfileKind::kDuration,
                       [](ProfileObject* o, const prof::Domain*, const std::string& n) {
                         o->duration = std::make_unique<prof::Event>(n);
                       });
}

int MXProfileCreateCounter(ProfileHandle domain, const char* counter_name, ProfileHandle* out) {
  return create_object("MXProfileCreateCounter", domain, counter_name, "the counter name", out,
                       ProfileKind::kCounter,
                       [](ProfileObject* o, const prof::Domain* d, const std::string& n) {
                         nanomx::c_api::check_not_null(d, "MXProfileCreateCounter", "domain");
                         o->counter = std::make_unique<prof::Counter>(*d, n);
                       });
}

int MXProfileDestroyHandle(ProfileHandle frame_handle) {
  NANOMX_API_BEGIN_UNPROFILED();
  NANOMX_CHECK(frame_handle != nullptr) << "Invalid NULL handle passed to MXProfileDestroyHandle";
  ProfileTable& table = profile_objects();
  ProfileObject& object = table.get(frame_handle, "MXProfileDestroyHandle", "frame_handle");
  // Domains are kept for the process's life, as MXNet: destroying one is a no-op.
  if (object.kind == ProfileKind::kDomain) return 0;
  // Released here (outside the table's lock): a duration still running records its event.
  ProfileObject released = table.release(frame_handle, "MXProfileDestroyHandle", "frame_handle");
  NANOMX_API_END();
}

int MXProfileDurationStart(ProfileHandle duration_handle) {
  NANOMX_API_BEGIN_UNPROFILED();
  with_object(duration_handle, ProfileKind::kDuration, "MXProfileDurationStart",
              [](ProfileObject* o) { o->duration->start(); });
  NANOMX_API_END();
}

int MXProfileDurationStop(ProfileHandle duration_handle) {
  NANOMX_API_BEGIN_UNPROFILED();
  with_object(duration_handle, ProfileKind::kDuration, "MXProfileDurationStop",
              [](ProfileObject* o) { o->duration->stop(); });
  NANOMX_API_END();
}

int MXProfileSetCounter(ProfileHandle counter_handle, uint64_t value) {
  NANOMX_API_BEGIN_UNPROFILED();
  with_object(counter_handle, ProfileKind::kCounter, "MXProfileSetCounter",
              [&](ProfileObject* o) { o->counter->set_value(value); });
  NANOMX_API_END();
}

int MXProfileAdjustCounter(ProfileHandle counter_handle, int64_t by_value) {
  NANOMX_API_BEGIN_UNPROFILED();
  with_object(counter_handle, ProfileKind::kCounter, "MXProfileAdjustCounter",
              [&](ProfileObject* o) { o->counter->increment(by_value); });
  NANOMX_API_END();
}

int MXProfileSetMarker(ProfileHandle domain, const char* instant_marker_name, const char* scope) {
  NANOMX_API_BEGIN_UNPROFILED();
  const prof::Domain* d = nullptr;
  with_object(domain, ProfileKind::kDomain, "MXProfileSetMarker",
              [&](ProfileObject* o) { d = o->domain.get(); });
  std::string name = checked_name(instant_marker_name, "MXProfileSetMarker", "the marker name");
  check_not_null(scope, "MXProfileSetMarker", "scope");
  prof::Marker(*d, name).mark(prof::parse_marker_scope(scope));
  NANOMX_API_END();
}
