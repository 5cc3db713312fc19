// NDArray: a dense array on a context — storage (shared between views) + shape + dtype + byte
// offset + the engine variable that orders every operation on the storage.
//
// Reads and writes of the data go through the engine (see engine.h): an operator pushes a
// function that reads its inputs' variables and writes its outputs'. The synchronous host
// copies wait on the engine first. Views (slice, at, reshape) share storage and variable.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nanomx/context.h"
#include "nanomx/dtype.h"
#include "nanomx/engine.h"
#include "nanomx/shape.h"

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx {

namespace storage {
class Arena;
}  // namespace storage

// What autograd (src/autograd/) knows about an array: the graph entry it is (a marked variable,
// or an output of a recorded operator call). Defined by that layer; opaque here.
struct AutogradEntry;

namespace detail {
// The reference count at the front of a storage chunk (defined in ndarray.cc).
struct ChunkBase {
  std::atomic<int64_t> refs{1};
};
struct Chunk;  // : ChunkBase
// Called when the count reached zero: the engine frees storage, variable and chunk after every
// pending use. One allocation per storage (no shared_ptr control block), and the engine's
// deletion function holds just the pointer.
void destroy_chunk(ChunkBase* chunk) noexcept;

// An owning reference to a chunk (intrusive count).
class ChunkRef {
 public:
  ChunkRef() = default;
  explicit ChunkRef(ChunkBase* chunk) noexcept : chunk_(chunk) {}  // adopts the first reference
  ChunkRef(const ChunkRef& other) noexcept : chunk_(other.chunk_) { acquire(); }
  ChunkRef(ChunkRef&& other) noexcept : chunk_(other.chunk_) { other.chunk_ = nullptr; }
  ChunkRef& operator=(const ChunkRef& other) noexcept {
    ChunkRef copy(other);
    std::swap(chunk_, copy.chunk_);
    return *this;
  }
  ChunkRef& operator=(ChunkRef&& other) noexcept {
    ChunkRef moved(std::move(other));
    std::swap(chunk_, moved.chunk_);
    return *this;
  }
  ~ChunkRef() { release(); }

  Chunk* operator->() const;  // defined where Chunk is
  explicit operator bool() const { return chunk_ != nullptr; }
  bool operator==(const ChunkRef& other) const { return chunk_ == other.chunk_; }
  bool operator==(std::nullptr_t) const { return chunk_ == nullptr; }

 private:
  void acquire() noexcept {
    if (chunk_) chunk_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() noexcept {
    if (chunk_ && chunk_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy_chunk(chunk_);
  }
  ChunkBase* chunk_ = nullptr;
};
}  // namespace detail

class NDArray {
 public:
  // A "none" array (MXNDArrayCreateNone): no storage, no shape.
  NDArray() = default;
  // An uninitialized array.
  NDArray(Shape shape, Context ctx, DType dtype = DType::kFloat32);
  // An uninitialized array in bytes [offset, offset + nbytes) of an arena (storage.h), on the
  // arena's context, with its own engine variable; offset must be a multiple of the dtype's
  // size. The array (and its views) keep the arena alive. Ordering between arrays whose regions
  // overlap is the caller's (a memory planner gives overlapping bytes only to arrays whose
  // lifetimes do not overlap).
  static NDArray in_arena(std::shared_ptr<storage::Arena> arena, size_t offset, Shape shape,
                          DType dtype = DType::kFloat32);

  bool is_none() const { return chunk_ == nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Context ctx() const;
  int64_t size() const { return shape_.size(); }
  size_t nbytes() const { return static_cast<size_t>(size()) * dtype_size(dtype_); }
  // The first element. Only meaningful inside an engine operation on this array's variable, or
  // after a wait. Null for a 0-size array.
  void* data() const;
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data());
  }
  engine::VarHandle var() const;
  // True when both arrays share storage (views of one another).
  bool same_storage(const NDArray& other) const { return chunk_ == other.chunk_; }

  // The autograd graph entry this array value is (null: none). It travels with copies of the
  // value (a handle and the list an operator returns), never with views or copies of the data:
  // a view is a different value of the graph.
  const std::shared_ptr<AutogradEntry>& autograd_entry() const { return autograd_; }
  void set_autograd_entry(std::shared_ptr<AutogradEntry> entry) { autograd_ = std::move(entry); }
  // The same data without a graph entry (MXNet's detach()).
  NDArray detach() const {
    NDArray copy = *this;
    copy.autograd_.reset();
    return copy;
  }

  // Views sharing storage and the engine variable: rows [begin, end) of axis 0; row `index`
  // (axis 0 removed); the same elements with another shape (same size).
  NDArray slice(int64_t begin, int64_t end) const;
  NDArray at(int64_t index) const;
  NDArray reshape(const Shape& shape) const;
  // The same elements under a new engine variable; the storage stays alive while the alias
  // does. Operations on the alias are not ordered with those on this array: the caller orders
  // them (a custom operator's body works on aliases inside the operation that holds this array's
  // variable, so that what it pushes does not queue behind that operation).
  NDArray alias() const;

  // Block until pending writes (wait_to_read) or all pending uses (wait_to_write) finished;
  // rethrow an operator's error kept on the array.
  void wait_to_read() const;
  void wait_to_write() const;
  // Synchronous copies from / to host memory; `bytes` must equal nbytes().
  void sync_copy_from_cpu(const void* src, size_t bytes) const;
  void sync_copy_to_cpu(void* dst, size_t bytes) const;
  // A new array on ctx holding a copy (engine op "_copyto"); copy_from copies src (same shape
  // and dtype) into this array.
  NDArray copy_to(Context ctx) const;
  void copy_from(const NDArray& src) const;

  // Convenience for tests and tools: the elements as a host vector (waits).
  template <typename T>
  std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<size_t>(size()));
    check_host_type(sizeof(T));
    sync_copy_to_cpu(out.data(), nbytes());
    return out;
  }

 private:
  void check_host_type(size_t element_size) const;
  detail::ChunkRef chunk_;
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  size_t byte_offset_ = 0;
  std::shared_ptr<AutogradEntry> autograd_;
};

// ---- Save / load (MXNet 1.x binary formats, docs/mxnet-compat.md#file-formats) ----

// The single-array blob (NDArray::Save; what pickling stores): appended to `out`.
void save_blob(const NDArray& array, std::string& out);
// The list/dict file body (magic 0x112). `names` is empty (a list) or one name per array.
std::string save_list(const std::vector<NDArray>& arrays, const std::vector<std::string>& names);
void save_file(const std::string& filename, const std::vector<NDArray>& arrays,
               const std::vector<std::string>& names);

struct LoadedArrays {
  std::vector<NDArray> arrays;
  std::vector<std::string> names;  // empty for a list
};
// `source` names the data in error messages (a file name, or "raw bytes").
NDArray load_blob(const void* data, size_t size, const std::string& source = "raw bytes");
LoadedArrays load_list(const void* data, size_t size, const std::string& source);
LoadedArrays load_file(const std::string& filename);

}  // namespace nanomx

#pragma GCC visibility pop
