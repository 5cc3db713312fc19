// A vector that keeps its first N elements inline and moves to the heap beyond them: the
// operator call path keeps its input, output, shape and variable lists here so that a call with
// a few arrays allocates nothing for them. Only the elements in use are constructed, so an
// unused inline slot costs nothing to make, move or destroy.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace nanomx::ops {

template <typename T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  explicit SmallVector(size_t n) { resize(n); }
  SmallVector(const SmallVector& other) {
    reserve(other.size_);
    for (const T& x : other) push_back(x);
  }
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      clear();
      reserve(other.size_);
      for (const T& x : other) push_back(x);
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  std::span<T> span() { return {data(), size_}; }
  std::span<const T> span() const { return {data(), size_}; }

  void clear() {
    if constexpr (!std::is_trivially_destructible_v<T>) std::destroy_n(data(), size_);
    size_ = 0;
  }
  // New elements are value-initialized.
  void resize(size_t n) {
    if (n < size_) {
      std::destroy_n(data() + n, size_ - n);
      size_ = n;
      return;
    }
    reserve(n);
    std::uninitialized_value_construct_n(data() + size_, n - size_);
    size_ = n;
  }
  // Copies or moves straight into place (no by-value temporary: NDArray copies are not free).
  void push_back(const T& value) {
    if (size_ == capacity_) {  // `value` may live in the buffer that growing frees
      T copy(value);
      emplace_back(std::move(copy));
      return;
    }
    emplace_back(value);
  }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  template <typename... A>
  T& emplace_back(A&&... args) {
    if (size_ == capacity_) reserve(capacity_ * 2);
    T* p = new (data() + size_) T(std::forward<A>(args)...);
    ++size_;
    return *p;
  }
  void reserve(size_t n) {
    if (n <= capacity_) return;
    T* fresh = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    std::uninitialized_move_n(data(), size_, fresh);
    std::destroy_n(data(), size_);
    free_heap();
    heap_ = fresh;
    data_ = fresh;
    capacity_ = n;
  }

 private:
  void free_heap() {
    if (heap_) ::operator delete(heap_, std::align_val_t(alignof(T)));
    heap_ = nullptr;
    data_ = inline_data();
    capacity_ = N;
  }
  void release() {
    clear();
    free_heap();
  }
  void take(SmallVector& other) noexcept {
    if (other.heap_) {
      heap_ = other.heap_;
      data_ = heap_;
      capacity_ = other.capacity_;
      size_ = other.size_;
      other.heap_ = nullptr;
      other.data_ = other.inline_data();
      other.capacity_ = N;
      other.size_ = 0;
      return;
    }
    std::uninitialized_move_n(other.data(), other.size_, data());
    size_ = other.size_;
    other.clear();
  }

  T* inline_data() { return reinterpret_cast<T*>(inline_); }

  T* heap_ = nullptr;
  T* data_ = inline_data();  // inline_ or heap_: one load per access
  size_t capacity_ = N;
  size_t size_ = 0;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace nanomx::ops
