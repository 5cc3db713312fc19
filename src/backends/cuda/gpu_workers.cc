// The GPU worker pools (docs/cuda.md): each worker owns a stream of its device; an operation's
// function enqueues its kernels there and returns, and the pool's StreamCompleter completes the
// operation once the stream has run them.
#include "backends/cuda/gpu_workers.h"

#include "backends/cuda/cuda_call.h"
#include "backends/cuda/device.h"
#include "backends/cuda/stream_completer.h"
#include "nanomx/env.h"

namespace nanomx::cuda {
namespace {

// The completer of the calling GPU worker's pool and the worker's stream there (null on other
// threads).
thread_local StreamCompleter* tls_completer = nullptr;
thread_local StreamCompleter::Stream* tls_stream = nullptr;

class GpuPool final : public engine::DevicePool {
 public:
  GpuPool(const std::string& name, int dev_id, engine::FinishFn finish)
      : dev_id_(dev_id), completer_(name + " completion", dev_id, std::move(finish)) {}

  std::function<void()> start_worker() override {
    cudaStream_t stream = nullptr;
    if (cudaSetDevice(dev_id_) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
      stream = nullptr;  // its operations then fail, saying so (no stream)
    }
    set_current_stream(stream);
    tls_completer = &completer_;
    tls_stream = completer_.add_stream(stream);
    return [stream] {
      if (stream != nullptr) {
        (void)cudaStreamSynchronize(stream);
        (void)cudaStreamDestroy(stream);
      }
      set_current_stream(nullptr);
      tls_completer = nullptr;
      tls_stream = nullptr;
    };
  }

  // A profiled operation is timed on the device (begin_timing records its start event).
  void execute(OprBlock& op, FunctionRef<ErrorRef(bool& new_error)> run) override {
    StreamCompleter::Timing timing;
    if (op.profiled) timing = tls_completer->begin_timing(tls_stream);
    op.device_timed = timing.start != nullptr;
    bool new_error = false;
    ErrorRef error = run(new_error);
    tls_completer->enqueue(current_stream(), &op, std::move(error), new_error, std::move(timing));
  }

 private:
  const int dev_id_;
  StreamCompleter completer_;
};

class GpuWorkers final : public engine::DeviceWorkers {
 public:
  // None without a visible GPU: as a build without CUDA.
  // MXNet's MXNET_GPU_WORKER_NTHREADS (2) and MXNET_GPU_COPY_NTHREADS (2; here 1 by default),
  // read when the first pool is made.
  int threads(bool copy) const override {
    if (device_count() == 0) return 0;
    static const int workers = env::get_int("GPU_WORKER_NTHREADS", 2);
    static const int copy_workers = env::get_int("GPU_COPY_NTHREADS", 1);
    return copy ? copy_workers : workers;
  }
  std::unique_ptr<engine::DevicePool> make_pool(const std::string& name, int dev_id,
                                                engine::FinishFn finish) override {
    return std::make_unique<GpuPool>(name, dev_id, std::move(finish));
  }
};

}  // namespace

engine::DeviceWorkers& gpu_workers() {
  static GpuWorkers workers;
  return workers;
}

}  // namespace nanomx::cuda
