// The host-emulated GPU's CUDA runtime: what nanomx calls of libcudart, on the host (hostgpu.h
// says what it keeps of CUDA's semantics and why). Defined against CUDA's own declarations
// (cuda_runtime_api.h), so the signatures cannot drift from the real library's.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hostgpu.h"

namespace {

using Clock = std::chrono::steady_clock;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0) {
    std::fprintf(stderr, "hostgpu: %s=%s is not a non-negative integer; using %d\n", name, v,
                 fallback);
    return fallback;
  }
  return static_cast<int>(n);
}

int device_count() {
  static const int n = env_int("NANOMX_HOSTGPU_DEVICES", 1);
  return n;
}

size_t memory_per_device() {
  static const size_t bytes = size_t(env_int("NANOMX_HOSTGPU_MEMORY_MB", 4096)) << 20;
  return bytes;
}

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;

// Every failure is also the thread's last error, as the runtime's are.
cudaError_t fail(cudaError_t status) {
  t_last_error = status;
  return status;
}

bool is_default_stream(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

}  // namespace

// The stream: a thread that runs its work in order.
struct CUstream_st {
  explicit CUstream_st(int dev) : device(dev), worker([this] { run(); }) {}

  void push(std::function<void()> work) {
    {
      std::lock_guard lock(m);
      queue.push_back(std::move(work));
    }
    cv.notify_all();
  }
  // Returns once everything pushed before has run.
  void drain() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return queue.empty() && !busy; });
  }
  void stop() {
    {
      std::lock_guard lock(m);
      stopping = true;
    }
    cv.notify_all();
    worker.join();
  }

  const int device;
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool busy = false;
  bool stopping = false;
  std::thread worker;  // last: starts once the rest is built

 private:
  void run() {
    t_device = device;
    std::unique_lock lock(m);
    for (;;) {
      cv.wait(lock, [&] { return !queue.empty() || stopping; });
      if (queue.empty()) return;  // stopping, and everything ran
      std::function<void()> work = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      try {
        work();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "hostgpu: stream work threw: %s\n", e.what());
        std::abort();
      }
      lock.lock();
      busy = false;
      cv.notify_all();
    }
  }
};

namespace {

struct EventState {
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0;   // records asked for
  uint64_t completed = 0;  // the last record its stream reached
  Clock::time_point when;  // ... and when it did
};

}  // namespace

struct CUevent_st {
  bool timing = true;
  // Shared with the records still queued: destroying an event with a pending record is legal.
  std::shared_ptr<EventState> state = std::make_shared<EventState>();
};

namespace {

enum class MemoryKind { kDevice, kPinned };
struct Allocation {
  size_t bytes;
  MemoryKind kind;
  int device;
};

// Every live allocation, stream and event; never destroyed (frees at exit run after static
// destructors).
struct Registry {
  std::mutex m;
  std::map<uintptr_t, Allocation> memory;
  std::vector<size_t> device_bytes = std::vector<size_t>(static_cast<size_t>(device_count()));
  std::map<cudaStream_t, std::shared_ptr<CUstream_st>> streams;
  std::map<cudaEvent_t, std::unique_ptr<CUevent_st>> events;

  // Forgets the allocation starting at ptr if it is of `kind` (and its bytes, for device
  // memory); false if there is none. Call with m held.
  bool forget(const void* ptr, MemoryKind kind) {
    auto it = memory.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == memory.end() || it->second.kind != kind) return false;
    if (kind == MemoryKind::kDevice) {
      device_bytes[static_cast<size_t>(it->second.device)] -= it->second.bytes;
    }
    memory.erase(it);
    return true;
  }

  // The allocation holding ptr, or memory.end().
  std::map<uintptr_t, Allocation>::iterator find(const void* ptr) {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    auto it = memory.upper_bound(p);
    if (it == memory.begin()) return memory.end();
    --it;
    return p < it->first + std::max<size_t>(it->second.bytes, 1) ? it : memory.end();
  }
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

std::shared_ptr<CUstream_st> find_stream(cudaStream_t s) {
  Registry& r = registry();
  std::lock_guard lock(r.m);
  auto it = r.streams.find(s);
  return it == r.streams.end() ? nullptr : it->second;
}

CUevent_st* find_event(cudaEvent_t e) {
  Registry& r = registry();
  std::lock_guard lock(r.m);
  auto it = r.events.find(e);
  return it == r.events.end() ? nullptr : it->second.get();
}

void* allocate(size_t bytes, MemoryKind kind, int device) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, rounded);
  if (p == nullptr) return nullptr;
  Registry& r = registry();
  std::lock_guard lock(r.m);
  r.memory[reinterpret_cast<uintptr_t>(p)] = {bytes, kind, device};
  return p;
}

// Where a pointer is: device memory (and whether [p, p + bytes) stays inside it), pinned host
// memory, or pageable host memory.
struct Where {
  bool device = false;
  bool pinned = false;
  bool in_bounds = true;
};
Where where(const void* p, size_t bytes) {
  Registry& r = registry();
  std::lock_guard lock(r.m);
  auto it = r.find(p);
  if (it == r.memory.end()) return {};
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  return {it->second.kind == MemoryKind::kDevice, it->second.kind == MemoryKind::kPinned,
          end <= it->first + it->second.bytes};
}

void drain_all_streams() {
  std::vector<std::shared_ptr<CUstream_st>> streams;
  {
    Registry& r = registry();
    std::lock_guard lock(r.m);
    for (auto& [handle, s] : r.streams) streams.push_back(s);
  }
  for (auto& s : streams) s->drain();
}

}  // namespace

namespace nanomx::hostgpu {

cudaError_t enqueue(cudaStream_t stream, std::function<void()> work) {
  if (is_default_stream(stream)) {
    work();
    return cudaSuccess;
  }
  std::shared_ptr<CUstream_st> s = find_stream(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  s->push(std::move(work));
  return cudaSuccess;
}

void set_last_error(cudaError_t status) { t_last_error = status; }

bool is_device_range(const void* ptr, size_t bytes) {
  const Where w = where(ptr, bytes);
  return w.device && w.in_bounds;
}

}  // namespace nanomx::hostgpu

using nanomx::hostgpu::enqueue;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = device_count();
  return *count == 0 ? fail(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  t_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  *device = t_device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pci_bus_id, int len, int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  if (pci_bus_id == nullptr || len <= 0) return fail(cudaErrorInvalidValue);
  std::snprintf(pci_bus_id, static_cast<size_t>(len), "0000:%02X:00.0", device + 1);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  Registry& r = registry();
  std::lock_guard lock(r.m);
  *total_bytes = memory_per_device();
  *free_bytes = memory_per_device() - r.device_bytes[static_cast<size_t>(t_device)];
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** dev_ptr, size_t size) {
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  *dev_ptr = nullptr;
  if (size == 0) return cudaSuccess;
  const int device = t_device;
  {
    Registry& r = registry();
    std::lock_guard lock(r.m);
    size_t& used = r.device_bytes[static_cast<size_t>(device)];
    if (size > memory_per_device() - used) return fail(cudaErrorMemoryAllocation);
    used += size;
  }
  *dev_ptr = allocate(size, MemoryKind::kDevice, device);
  return *dev_ptr != nullptr ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaMallocAsync(void** dev_ptr, size_t size, cudaStream_t) {
  return cudaMalloc(dev_ptr, size);  // usable by the stream's later work, as the pool's memory
}

namespace {
// Forgets a device allocation at once (a later use or second free is an error) and returns the
// memory to the host when `release_on` reaches it (nullptr: now).
cudaError_t free_device(void* dev_ptr, cudaStream_t release_on) {
  if (dev_ptr == nullptr) return cudaSuccess;
  {
    Registry& r = registry();
    std::lock_guard lock(r.m);
    if (!r.forget(dev_ptr, MemoryKind::kDevice)) return fail(cudaErrorInvalidValue);
  }
  return enqueue(release_on, [dev_ptr] { std::free(dev_ptr); });
}
}  // namespace

cudaError_t cudaFree(void* dev_ptr) {
  drain_all_streams();  // cudaFree synchronises the device
  return free_device(dev_ptr, nullptr);
}

cudaError_t cudaFreeAsync(void* dev_ptr, cudaStream_t stream) {
  return free_device(dev_ptr, stream);
}

cudaError_t cudaHostAlloc(void** host_ptr, size_t size, unsigned int) {
  *host_ptr = allocate(size, MemoryKind::kPinned, -1);
  return *host_ptr != nullptr ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  {
    Registry& r = registry();
    std::lock_guard lock(r.m);
    if (!r.forget(ptr, MemoryKind::kPinned)) return fail(cudaErrorInvalidValue);
  }
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  *attributes = {};
  attributes->type = cudaMemoryTypeUnregistered;
  attributes->device = -2;
  Registry& r = registry();
  std::lock_guard lock(r.m);
  auto it = r.find(ptr);
  if (it == r.memory.end()) return cudaSuccess;
  const bool device = it->second.kind == MemoryKind::kDevice;
  attributes->type = device ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
  attributes->device = device ? it->second.device : t_device;
  attributes->devicePointer = const_cast<void*>(ptr);
  attributes->hostPointer = device ? nullptr : const_cast<void*>(ptr);
  return cudaSuccess;
}

namespace {
// Checks a copy's pointers against its kind (cudaMemcpyDefault: anything) and that the device
// side stays inside its allocation; says whether a host side is pageable.
cudaError_t check_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                       bool& pageable) {
  const Where d = where(dst, count), s = where(src, count);
  if ((d.device && !d.in_bounds) || (s.device && !s.in_bounds)) return cudaErrorInvalidValue;
  const bool want_dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool want_src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind != cudaMemcpyDefault && (d.device != want_dst_device || s.device != want_src_device)) {
    return cudaErrorInvalidValue;
  }
  pageable = (!d.device && !d.pinned) || (!s.device && !s.pinned);
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  bool pageable = false;
  if (const cudaError_t status = check_copy(dst, src, count, kind, pageable)) return fail(status);
  if (count > 0) std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  bool pageable = false;
  if (const cudaError_t status = check_copy(dst, src, count, kind, pageable)) return fail(status);
  if (count == 0) return cudaSuccess;
  if (pageable) {
    // As CUDA: a copy from or to pageable memory waits for the stream and is done on return.
    if (!is_default_stream(stream)) {
      std::shared_ptr<CUstream_st> s = find_stream(stream);
      if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
      s->drain();
    }
    std::memmove(dst, src, count);
    return cudaSuccess;
  }
  return enqueue(stream, [dst, src, count] { std::memmove(dst, src, count); });
}

cudaError_t cudaMemsetAsync(void* dev_ptr, int value, size_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (!nanomx::hostgpu::is_device_range(dev_ptr, count)) return fail(cudaErrorInvalidValue);
  return enqueue(stream, [dev_ptr, value, count] { std::memset(dev_ptr, value, count); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  if (device_count() == 0) return fail(cudaErrorNoDevice);
  auto s = std::make_shared<CUstream_st>(t_device);
  *stream = s.get();
  Registry& r = registry();
  std::lock_guard lock(r.m);
  r.streams[s.get()] = std::move(s);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::shared_ptr<CUstream_st> s;
  {
    Registry& r = registry();
    std::lock_guard lock(r.m);
    auto it = r.streams.find(stream);
    if (it == r.streams.end()) return fail(cudaErrorInvalidResourceHandle);
    s = std::move(it->second);
    r.streams.erase(it);
  }
  s->stop();  // its queued work still runs, as CUDA's does
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (is_default_stream(stream)) return cudaSuccess;
  std::shared_ptr<CUstream_st> s = find_stream(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  s->drain();
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  auto e = std::make_unique<CUevent_st>();
  e->timing = (flags & cudaEventDisableTiming) == 0;
  *event = e.get();
  Registry& r = registry();
  std::lock_guard lock(r.m);
  r.events[e.get()] = std::move(e);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Registry& r = registry();
  std::lock_guard lock(r.m);
  return r.events.erase(event) == 1 ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  CUevent_st* e = find_event(event);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  std::shared_ptr<EventState> state = e->state;
  uint64_t id = 0;
  {
    std::lock_guard lock(state->m);
    id = ++state->recorded;
  }
  return enqueue(stream, [state, id] {
    {
      std::lock_guard lock(state->m);
      if (id > state->completed) {
        state->completed = id;
        state->when = Clock::now();
      }
    }
    state->cv.notify_all();
  });
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  CUevent_st* e = find_event(event);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  std::lock_guard lock(e->state->m);
  // Not ready is an answer, not an error: the last error stays as it was.
  return e->state->completed >= e->state->recorded ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  CUevent_st* e = find_event(event);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  EventState& s = *e->state;
  std::unique_lock lock(s.m);
  const uint64_t target = s.recorded;
  s.cv.wait(lock, [&] { return s.completed >= target; });
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  CUevent_st* a = find_event(start);
  CUevent_st* b = find_event(end);
  if (a == nullptr || b == nullptr || !a->timing || !b->timing) {
    return fail(cudaErrorInvalidResourceHandle);
  }
  Clock::time_point ta, tb;
  for (auto [e, t] : {std::pair{a, &ta}, std::pair{b, &tb}}) {
    std::lock_guard lock(e->state->m);
    if (e->state->recorded == 0) return fail(cudaErrorInvalidResourceHandle);
    if (e->state->completed < e->state->recorded) return fail(cudaErrorNotReady);
    *t = e->state->when;
  }
  *ms = std::chrono::duration<float, std::milli>(tb - ta).count();
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t status = t_last_error;
  t_last_error = cudaSuccess;
  return status;
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    default:
      return "unknown error";
  }
}

}  // extern "C"
