// A process-wide pool of fixed-size blocks for objects that one thread allocates and another
// frees (the engine's operation blocks and variables, NDArray storage chunks). glibc's per-thread
// caches do not help that pattern: every block freed on a thread other than the allocating one
// goes back through the arena lock. Here a block freed anywhere goes onto one free list, guarded
// by a short spin lock, and the next allocation on any thread takes it back.
//
// Memory: the pool keeps every block it ever allocated (its high-water mark) for the life of
// the process and never gives it back to the system. The free list is reachable from a global,
// so leak checkers see pooled blocks as reachable, not leaked. The pool is never destroyed:
// blocks may be freed during static destruction.
#pragma once

#include <atomic>
#include <cstddef>
#include <new>

#include "base/spin_lock.h"

namespace nanomx::base {

// Raw blocks of Size bytes aligned for Align. One instance per object type (see PooledNew).
template <size_t Size, size_t Align>
class BlockPool {
  struct Node {
    Node* next;
  };
  static_assert(Size >= sizeof(Node) && Align >= alignof(Node));

 public:
  void* allocate() {
    lock_.lock();
    Node* node = head_;
    if (node != nullptr) {
      head_ = node->next;
      --free_;
    }
    lock_.unlock();
    if (node != nullptr) return node;
    void* p = ::operator new (Size, std::align_val_t{Align});
    allocated_.fetch_add(1, std::memory_order_relaxed);
    return p;
  }
  void deallocate(void* p) noexcept {
    if (p == nullptr) return;
    auto* node = static_cast<Node*>(p);
    lock_.lock();
    node->next = head_;
    head_ = node;
    ++free_;
    lock_.unlock();
  }
  // Blocks allocated from the system so far (in use or on the free list).
  size_t allocated() const { return allocated_.load(std::memory_order_relaxed); }
  // Blocks on the free list.
  size_t free_blocks() {
    lock_.lock();
    const size_t n = free_;
    lock_.unlock();
    return n;
  }

 private:
  SpinLock lock_;
  Node* head_ = nullptr;  // guarded by lock_
  size_t free_ = 0;       // guarded by lock_
  std::atomic<size_t> allocated_{0};
};

// The pool for objects of type T. constinit with a trivial destructor: usable at any time,
// including during static initialization and destruction.
template <typename T>
struct PoolFor {
  static constexpr size_t kAlign = alignof(T) < alignof(void*) ? alignof(void*) : alignof(T);
  static constexpr size_t kSize = (sizeof(T) + kAlign - 1) / kAlign * kAlign;
  using Pool = BlockPool<kSize, kAlign>;
  static Pool& get() { return pool; }
  static constinit inline Pool pool{};
};

// operator new/delete for a class that draws its blocks from its pool: derive from
// Pooled<Derived>. Only objects of exactly type T may be allocated this way.
template <typename T>
struct Pooled {
  static void* operator new(size_t size) {
    if (size != sizeof(T)) return ::operator new(size);
    return PoolFor<T>::get().allocate();
  }
  static void operator delete(void* p, size_t size) noexcept {
    if (size != sizeof(T)) {
      ::operator delete(p);
      return;
    }
    PoolFor<T>::get().deallocate(p);
  }
};

}  // namespace nanomx::base
