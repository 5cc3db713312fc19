// oneDNN's engine, streams, primitive cache, scratchpads and thread team (onednn.h).
#include "backends/cpu/onednn/onednn.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "nanomx/engine.h"
#include "nanomx/env.h"
#include "nanomx/error.h"
#include "nanomx/profiler.h"

namespace nanomx::ops::cpu::onednn {

dnnl::engine& engine() {
  static auto* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);  // never destroyed
  return *e;
}

namespace {

// Operations still queued when a program ends run after its static objects are destroyed
// (engine.h); libdnnl's own, made lazily by the first primitive of each kind, would be gone by
// then (a script ending on 30 queued convolutions crashed in dnnl_reorder_primitive_desc_create).
// An exit handler registered after those statics exist runs before they are destroyed: one is
// registered after the first creation of each kind, and waits for the queued work.
void wait_for_queued_work_at_exit(std::string_view kind) {
  static std::mutex mutex;
  static auto* registered = new std::unordered_map<std::string, bool>;
  std::lock_guard lock(mutex);
  if (!registered->try_emplace(std::string(kind), true).second) return;
  std::atexit([] {
    try {
      nanomx::engine::Engine::get().wait_all();
    } catch (...) {
      // An operation's error: nobody is left to read it.
    }
  });
}

}  // namespace

bool enabled() {
  // MXNet's switch (MXNET_MKLDNN_ENABLED=0 sends everything to the plain kernels); read once.
  static const bool on = env::get_int("MKLDNN_ENABLED", 1) != 0;
  return on;
}

bool supports(DType dtype) { return dtype == DType::kFloat32 && enabled(); }

dnnl::memory::data_type data_type(DType dtype) {
  NANOMX_CHECK(supports(dtype)) << "oneDNN: dtype " << dtype_name(dtype)
                                << " is not computed by oneDNN here (float32 only)";
  return dnnl::memory::data_type::f32;
}

dims to_dims(const Shape& shape) { return dims(shape.dims().begin(), shape.dims().end()); }

dnnl::memory::desc plain_desc(const dims& d, DType dtype) {
  static constexpr tag kTags[] = {tag::a,    tag::a,     tag::ab,    tag::abc,
                                  tag::abcd, tag::abcde, tag::abcdef};
  NANOMX_CHECK(d.size() <= 6) << "oneDNN: " << d.size() << " axes (at most 6)";
  if (d.empty()) return {dims{1}, data_type(dtype), tag::a};
  return {d, data_type(dtype), kTags[d.size()]};
}

dnnl::memory wrap(const dnnl::memory::desc& desc, const NDArray& a) {
  return wrap(desc, const_cast<void*>(static_cast<const void*>(a.data())));
}

dnnl::memory wrap(const dnnl::memory::desc& desc, void* data) { return {desc, engine(), data}; }

namespace {

struct Cache {
  std::shared_mutex mutex;
  std::unordered_map<std::string, std::unique_ptr<Primitive>> entries;
};
Cache& cache() {
  static auto* c = new Cache;  // never destroyed: kernels may run during exit
  return *c;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

}  // namespace

const Primitive& cached(const std::string& key, std::string_view kind,
                        const std::function<Primitive()>& make) {
  Cache& c = cache();
  {
    std::shared_lock lock(c.mutex);
    if (auto it = c.entries.find(key); it != c.entries.end()) return *it->second;
  }
  std::unique_ptr<Primitive> made;
  {
    // Interned once per kind: the name table grows with kinds, not with shapes.
    const profiler::NameId name = profiler::intern("oneDNN create " + std::string(kind));
    profiler::ScopedEvent event(name);
    made = std::make_unique<Primitive>(make());
  }
  wait_for_queued_work_at_exit(kind);
  std::unique_lock lock(c.mutex);
  auto [it, inserted] = c.entries.try_emplace(key, std::move(made));
  return *it->second;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void execute(const Primitive& p, std::unordered_map<int, dnnl::memory> args) {
  set_thread_team();
  const dnnl::memory::desc scratch = p.pd.query_md(dnnl::query::scratchpad_md);
  NDArray scratch_space;
  if (scratch.get_size() > 0) {
    scratch_space =
        NDArray(Shape{static_cast<int64_t>(scratch.get_size())}, Context::cpu(0), DType::kUint8);
    args.emplace(DNNL_ARG_SCRATCHPAD, wrap(scratch, scratch_space));
  }
  dnnl::stream& s = stream();
  try {
    p.primitive.execute(s, args);
    s.wait();
  } catch (const dnnl::error& e) {
    NANOMX_THROW() << "oneDNN: " << e.what() << " (status " << static_cast<int>(e.status) << ", "
                   << args.size() << " arguments)";
  }
}

int intra_op_threads() {
  static const int n = [] {
    // NANOMX_OMP_MAX_THREADS or MXNet's MXNET_OMP_MAX_THREADS, then OpenMP's own variable.
    const int configured = env::get_int("OMP_MAX_THREADS", 0);
    if (configured >= 1) return configured;
    if (const char* omp = std::getenv("OMP_NUM_THREADS"); omp != nullptr && std::atoi(omp) >= 1) {
      return std::atoi(omp);
    }
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int workers = std::max(1, static_cast<int>(env::get_int("CPU_WORKER_NTHREADS", 1)));
    return std::max(1, cores / workers);
  }();
  return n;
}

void set_thread_team() {
  thread_local bool done = false;
  if (done) return;
  done = true;
  omp_set_num_threads(intra_op_threads());
  static std::once_flag blas;
  std::call_once(blas, [] { openblas_set_num_threads(intra_op_threads()); });
}

std::string key_of(std::string_view op, const std::vector<dims>& shapes,
                   std::initializer_list<int64_t> extra, DType dtype) {
  std::string key(op);
  key += '/';
  key += dtype_name(dtype);
  for (const dims& d : shapes) {
    key += '|';
    for (const auto x : d) {
      key += std::to_string(x);
      key += ',';
    }
  }
  key += '#';
  for (const int64_t x : extra) {
    key += std::to_string(x);
    key += ',';
  }
  return key;
}

}  // namespace nanomx::ops::cpu::onednn
