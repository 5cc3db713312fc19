// A vector that keeps its first N elements inline and moves to the heap beyond them: the
// operator call path keeps its input, output, shape and variable lists here so that a call with
// a few arrays allocates nothing for them.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace nanomx::ops {

template <typename T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  explicit SmallVector(size_t n) { resize(n); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_.empty() ? inline_.data() : heap_.data(); }
  const T* data() const { return heap_.empty() ? inline_.data() : heap_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  std::span<T> span() { return {data(), size_}; }
  std::span<const T> span() const { return {data(), size_}; }

  // New elements are default-constructed (inline ones keep whatever they held: callers assign).
  void resize(size_t n) {
    if (heap_.empty() && n <= N) {
      for (size_t i = n; i < size_; ++i) inline_[i] = T();
      size_ = n;
      return;
    }
    spill();
    heap_.resize(n);
    size_ = n;
  }
  void push_back(T value) {
    if (heap_.empty() && size_ < N) {
      inline_[size_++] = std::move(value);
      return;
    }
    spill();
    heap_.push_back(std::move(value));
    ++size_;
  }

 private:
  void spill() {
    if (!heap_.empty()) return;
    heap_.reserve(size_ + 1);
    for (size_t i = 0; i < size_; ++i) heap_.push_back(std::move(inline_[i]));
    for (size_t i = 0; i < size_; ++i) inline_[i] = T();
    if (heap_.empty()) heap_.reserve(N + 1);
  }

  std::array<T, N> inline_{};
  std::vector<T> heap_;
  size_t size_ = 0;
};

}  // namespace nanomx::ops
