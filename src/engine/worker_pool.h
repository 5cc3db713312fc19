// The engine's FIFO worker pool: threads that poll their queue for a while before they sleep,
// and the spin timer they (and waiting threads) poll with. Internal to the threaded engine.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/spin_lock.h"
#include "engine/var.h"
#include "profiler/hooks.h"

namespace nanomx::engine {

// Sleeping and waking a thread are futex calls, which cost microseconds on a virtual machine,
// so a worker polls its queue for a while after its last operation before it sleeps.
constexpr auto kWorkerSpin = std::chrono::microseconds(50);
// An operation ready when it is pushed is left to the pushing thread for this long by a polling
// worker: when that thread waits for it right away, it runs it itself (no hand-off).
constexpr auto kPusherGrace = std::chrono::microseconds(2);

// Polls for at most `budget`, reading the clock every 16 rounds and yielding the CPU every 128
// (a few µs): on an oversubscribed machine a polling thread must not keep the thread it waits
// for off the CPU.
class SpinTimer {
 public:
  explicit SpinTimer(std::chrono::steady_clock::duration budget) : budget_(budget) {}
  // Pauses once; false once the budget is spent.
  bool spin() {
    base::cpu_relax();
    if (++rounds_ % 16 != 0) return true;
    if (rounds_ % 128 == 0) std::this_thread::yield();
    const auto now = std::chrono::steady_clock::now();
    if (rounds_ == 16) start_ = now;
    return now - start_ < budget_;
  }

 private:
  std::chrono::steady_clock::duration budget_;
  std::chrono::steady_clock::time_point start_{};
  uint32_t rounds_ = 0;
};

class WorkerPool {
 public:
  using Executor = std::function<void(OprBlock*)>;
  // A device's per-thread state (a GPU worker's device and stream): made on the worker thread
  // before its first operation, released by the returned function when the thread ends.
  using ThreadSetup = std::function<std::function<void()>()>;
  WorkerPool(std::string name, int threads, Executor execute, ThreadSetup setup = {})
      : execute_(std::move(execute)) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, setup, thread_name = name + " worker " + std::to_string(i)] {
        profiler::set_thread_name(thread_name);
        std::function<void()> teardown = setup ? setup() : std::function<void()>{};
        run();
        if (teardown) teardown();
      });
    }
  }
  ~WorkerPool() {
    {
      std::lock_guard lock(sleep_mutex_);
      stop_.store(true);
    }
    sleep_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  // fresh: ready when pushed (a polling worker leaves it to the pusher for kPusherGrace).
  void push(OprBlock* op, bool front, bool fresh) {
    {
      std::lock_guard lock(queue_lock_);
      if (fresh) {
        fresh_.push_back(op);
        fresh_count_.fetch_add(1);  // seq_cst: pairs with sleepers_ (no lost wake-up)
      } else {
        if (front) {
          queue_.push_front(op);
        } else {
          queue_.push_back(op);
        }
        queued_.fetch_add(1);
      }
    }
    if (sleepers_.load() > 0) {
      std::lock_guard lock(sleep_mutex_);
      sleep_cv_.notify_one();
    }
  }
  // Removes op from the queue if it is there (ready, and no worker took it yet): the caller
  // then owns it and runs it.
  bool try_claim(OprBlock* op) {
    if (fresh_count_.load(std::memory_order_relaxed) == 0 &&
        queued_.load(std::memory_order_relaxed) == 0) {
      return false;
    }
    std::lock_guard lock(queue_lock_);
    return erase(fresh_, fresh_count_, op) || erase(queue_, queued_, op);
  }
  // The oldest queued operation (fresh ones last), or nullptr.
  OprBlock* try_pop(bool fresh_too = true) {
    if (queued_.load(std::memory_order_relaxed) == 0 &&
        (!fresh_too || fresh_count_.load(std::memory_order_relaxed) == 0)) {
      return nullptr;
    }
    std::lock_guard lock(queue_lock_);
    if (!queue_.empty()) return pop_front(queue_, queued_);
    if (fresh_too && !fresh_.empty()) return pop_front(fresh_, fresh_count_);
    return nullptr;
  }

 private:
  static bool erase(std::deque<OprBlock*>& q, std::atomic<int64_t>& count, OprBlock* op) {
    for (auto it = q.rbegin(); it != q.rend(); ++it) {
      if (*it == op) {
        q.erase(std::next(it).base());
        count.fetch_sub(1, std::memory_order_relaxed);
        return true;
      }
    }
    return false;
  }
  static OprBlock* pop_front(std::deque<OprBlock*>& q, std::atomic<int64_t>& count) {
    OprBlock* op = q.front();
    q.pop_front();
    count.fetch_sub(1, std::memory_order_relaxed);
    return op;
  }

  void run() {
    using Clock = std::chrono::steady_clock;
    bool take_fresh = false;
    for (;;) {
      if (OprBlock* op = try_pop(take_fresh)) {
        execute_(op);
        take_fresh = false;
        continue;
      }
      // Poll: other work at once, a fresh operation once the pusher's grace is over.
      take_fresh = false;
      SpinTimer timer(kWorkerSpin);
      Clock::time_point fresh_since{};
      bool work = false;
      for (;;) {
        if (queued_.load(std::memory_order_relaxed) > 0 || stop_.load(std::memory_order_relaxed)) {
          work = true;
          break;
        }
        if (fresh_count_.load(std::memory_order_relaxed) > 0) {
          const auto now = Clock::now();
          if (fresh_since == Clock::time_point{}) {
            fresh_since = now;
          } else if (now - fresh_since >= kPusherGrace) {
            take_fresh = work = true;
            break;
          }
        } else {
          fresh_since = {};
        }
        if (!timer.spin()) break;
      }
      if (!work) {
        std::unique_lock lock(sleep_mutex_);
        sleepers_.fetch_add(1);
        sleep_cv_.wait(
            lock, [this] { return queued_.load() > 0 || fresh_count_.load() > 0 || stop_.load(); });
        sleepers_.fetch_sub(1);
        take_fresh = true;  // waking up took longer than the grace
      }
      if (stop_.load() && queued_.load() <= 0 && fresh_count_.load() <= 0) return;
    }
  }

  Executor execute_;
  base::SpinLock queue_lock_;
  std::deque<OprBlock*> queue_;  // guarded by queue_lock_
  std::deque<OprBlock*> fresh_;  // guarded by queue_lock_
  std::atomic<int64_t> queued_{0};
  std::atomic<int64_t> fresh_count_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
  std::vector<std::thread> threads_;
};

}  // namespace nanomx::engine
