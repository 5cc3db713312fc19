// A test-and-test-and-set lock for tiny critical sections (a pointer swap, a queue push): when
// uncontended it is one exchange and one store, where a contended std::mutex sleeps in the kernel
// at once (microseconds on a virtual machine). It yields after a short spin so that a preempted
// holder can finish. Used by the object pools, the storage pool and the engine's queues and
// variables.
#pragma once

#include <atomic>
#include <thread>

namespace nanomx::base {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class SpinLock {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 256) {
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace nanomx::base
