#include "nanomx/ndarray.h"

#include <cstring>

#include "base/object_pool.h"
#include "nanomx/error.h"
#include "nanomx/storage.h"
#include "storage/copy.h"

namespace nanomx {

namespace detail {
// Storage plus its engine variable. Destroying the last reference pushes DeleteVariable, which
// frees the storage after every pending use. Chunks are made on the pushing thread and freed on a
// worker: they come from a process-wide block pool (base/object_pool.h).
// In an arena, `block` is a view of the arena's region (not released) and `arena` keeps the
// arena's block alive until the chunk is freed, after its last use.
struct Chunk : ChunkBase, base::Pooled<Chunk> {
  storage::Block block;
  engine::VarHandle var = nullptr;
  std::shared_ptr<storage::Arena> arena;
  ChunkRef source;  // an alias's chunk, kept alive (and its storage unreleased) by this one

  Chunk(size_t bytes, Context ctx) : block(storage::allocate(bytes, ctx)) {
    try {
      var = engine::Engine::get().new_variable();
    } catch (...) {
      storage::release(block);
      throw;
    }
  }
  Chunk(std::shared_ptr<storage::Arena> in, size_t offset, size_t bytes, size_t alignment)
      : arena(std::move(in)) {
    block.data = arena->region(offset, bytes, alignment);
    block.size = bytes;
    block.ctx = arena->ctx();
    var = engine::Engine::get().new_variable();
  }
  // An alias: `of`'s storage (not released here) under a variable of its own.
  explicit Chunk(ChunkRef of) : block(of->block), source(std::move(of)) {
    var = engine::Engine::get().new_variable();
  }
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
};

void destroy_chunk(ChunkBase* base) noexcept {
  auto* chunk = static_cast<Chunk*>(base);
  engine::Engine::get().delete_variable(
      [chunk] {
        if (!chunk->arena && !chunk->source) storage::release(chunk->block);
        delete chunk;  // and its reference to the arena
      },
      chunk->block.ctx, chunk->var);
}

Chunk* ChunkRef::operator->() const { return static_cast<Chunk*>(chunk_); }
}  // namespace detail

NDArray::NDArray(Shape shape, Context ctx, DType dtype) : shape_(std::move(shape)), dtype_(dtype) {
  NANOMX_CHECK(dtype_valid(static_cast<int32_t>(dtype)))
      << "NDArray: invalid dtype code " << static_cast<int>(dtype);
  const int64_t n = shape_.size();  // validates the dims
  size_t bytes = 0;
  NANOMX_CHECK(!__builtin_mul_overflow(static_cast<size_t>(n), dtype_size(dtype), &bytes))
      << "NDArray: shape " << shape_ << " is too large";
  chunk_ = detail::ChunkRef(new detail::Chunk(bytes, ctx));
}

NDArray NDArray::in_arena(std::shared_ptr<storage::Arena> arena, size_t offset, Shape shape,
                          DType dtype) {
  NANOMX_CHECK(arena != nullptr) << "NDArray::in_arena: null arena";
  NANOMX_CHECK(dtype_valid(static_cast<int32_t>(dtype)))
      << "NDArray::in_arena: invalid dtype code " << static_cast<int>(dtype);
  NDArray array;
  array.shape_ = std::move(shape);
  array.dtype_ = dtype;
  const int64_t n = array.shape_.size();  // validates the dims
  size_t bytes = 0;
  NANOMX_CHECK(!__builtin_mul_overflow(static_cast<size_t>(n), dtype_size(dtype), &bytes))
      << "NDArray::in_arena: shape " << array.shape_ << " is too large";
  // Elements at their natural alignment; Arena::region checks bounds and alignment.
  array.chunk_ =
      detail::ChunkRef(new detail::Chunk(std::move(arena), offset, bytes, dtype_size(dtype)));
  return array;
}

Context NDArray::ctx() const { return chunk_ ? chunk_->block.ctx : Context::cpu(0); }

void* NDArray::data() const {
  if (!chunk_ || chunk_->block.data == nullptr) return nullptr;
  return static_cast<char*>(chunk_->block.data) + byte_offset_;
}

engine::VarHandle NDArray::var() const {
  NANOMX_CHECK(chunk_) << "operation on a none NDArray (created empty, never assigned)";
  return chunk_->var;
}

NDArray NDArray::slice(int64_t begin, int64_t end) const {
  NANOMX_CHECK(chunk_) << "slice of a none NDArray";
  NANOMX_CHECK(shape_.ndim() >= 1) << "slice: array of shape " << shape_ << " has no axis 0";
  NANOMX_CHECK(0 <= begin && begin <= end && end <= shape_[0])
      << "slice: range [" << begin << ", " << end << ") out of bounds for shape " << shape_;
  NDArray view = detach();
  view.shape_[0] = end - begin;
  const int64_t row = shape_[0] == 0 ? 0 : size() / shape_[0];
  view.byte_offset_ += static_cast<size_t>(begin * row) * dtype_size(dtype_);
  return view;
}

NDArray NDArray::at(int64_t index) const {
  NANOMX_CHECK(chunk_) << "at() of a none NDArray";
  NANOMX_CHECK(shape_.ndim() >= 1) << "at: array of shape " << shape_ << " has no axis 0";
  NANOMX_CHECK(0 <= index && index < shape_[0])
      << "at: index " << index << " out of bounds for shape " << shape_;
  NDArray view = slice(index, index + 1);
  view.shape_ = Shape(view.shape_.dims().subspan(1));
  if (view.shape_.ndim() == 0) view.shape_ = Shape{1};  // MXNet 1.x: at() of a 1-D array is (1,)
  return view;
}

NDArray NDArray::reshape(const Shape& shape) const {
  NANOMX_CHECK(chunk_) << "reshape of a none NDArray";
  NANOMX_CHECK(shape.size() == size())
      << "reshape: cannot view shape " << shape_ << " (" << size() << " elements) as " << shape
      << " (" << shape.size() << " elements)";
  NDArray view = detach();
  view.shape_ = shape;
  return view;
}

NDArray NDArray::alias() const {
  NANOMX_CHECK(chunk_) << "alias of a none NDArray";
  NDArray view = detach();
  view.chunk_ = detail::ChunkRef(new detail::Chunk(chunk_));
  return view;
}

void NDArray::wait_to_read() const {
  if (!chunk_) return;
  engine::Engine::get().wait_for_var(chunk_->var);
}

void NDArray::wait_to_write() const {
  if (!chunk_) return;
  auto& engine = engine::Engine::get();
  const engine::VarHandle writes[] = {chunk_->var};
  engine.push({}, ctx(), {}, writes);  // unnamed, never profiled: orders after pending uses
  engine.wait_for_var(chunk_->var);
}

void NDArray::sync_copy_from_cpu(const void* src, size_t bytes) const {
  NANOMX_CHECK(chunk_) << "SyncCopyFromCPU into a none NDArray";
  NANOMX_CHECK(bytes == nbytes()) << "SyncCopyFromCPU: " << bytes << " bytes given, array of shape "
                                  << shape_ << " and dtype " << dtype_name(dtype_) << " holds "
                                  << nbytes();
  NANOMX_CHECK(src != nullptr || bytes == 0) << "SyncCopyFromCPU: null source";
  wait_to_write();
  if (bytes) storage::copy_bytes(data(), ctx(), src, Context::cpu(0), bytes);
}

void NDArray::sync_copy_to_cpu(void* dst, size_t bytes) const {
  NANOMX_CHECK(chunk_) << "SyncCopyToCPU from a none NDArray";
  NANOMX_CHECK(bytes == nbytes()) << "SyncCopyToCPU: " << bytes
                                  << " bytes requested, array of shape " << shape_ << " and dtype "
                                  << dtype_name(dtype_) << " holds " << nbytes();
  NANOMX_CHECK(dst != nullptr || bytes == 0) << "SyncCopyToCPU: null destination";
  wait_to_read();
  if (bytes) storage::copy_bytes(dst, Context::cpu(0), data(), ctx(), bytes);
}

void NDArray::check_host_type(size_t element_size) const {
  NANOMX_CHECK(element_size == dtype_size(dtype_))
      << "to_vector: element size " << element_size << " does not match dtype "
      << dtype_name(dtype_);
}

NDArray NDArray::copy_to(Context ctx) const {
  NANOMX_CHECK(chunk_) << "copyto from a none NDArray";
  NDArray out(shape_, ctx, dtype_);
  out.copy_from(*this);
  return out;
}

void NDArray::copy_from(const NDArray& src) const {
  NANOMX_CHECK(chunk_ && src.chunk_) << "_copyto: none NDArray";
  NANOMX_CHECK(src.shape_ == shape_ && src.dtype_ == dtype_)
      << "_copyto: source shape " << src.shape_ << " " << dtype_name(src.dtype_)
      << " does not match destination " << shape_ << " " << dtype_name(dtype_);
  if (src.chunk_ == chunk_ && src.byte_offset_ == byte_offset_) return;  // copy onto itself
  static const profiler::NameId kName = profiler::intern("_copyto");
  engine::PushOptions options;
  options.name = "_copyto";
  options.name_id = kName;
  const Shape* shapes[] = {&shape_};
  options.input_shapes = shapes;
  options.output_shapes = shapes;
  const engine::VarHandle reads[] = {src.chunk_->var};
  const engine::VarHandle writes[] = {chunk_->var};
  // A copy that touches a GPU runs on that GPU's copy worker (its own stream, so that copies
  // overlap compute: docs/cuda.md); between host memories, on the destination's workers.
  const bool to_gpu = !ctx().is_cpu();
  const bool from_gpu = !src.ctx().is_cpu();
  Context run_on = ctx();
  if (to_gpu || from_gpu) {
    run_on = to_gpu ? ctx() : src.ctx();
    options.prop = to_gpu && !from_gpu   ? engine::FnProperty::kCopyToGPU
                   : from_gpu && !to_gpu ? engine::FnProperty::kCopyFromGPU
                                         : engine::FnProperty::kNormal;
  }
  engine::Engine::get().push(
      [src, dst = *this] {
        if (dst.nbytes()) {
          storage::copy_bytes(dst.data(), dst.ctx(), src.data(), src.ctx(), dst.nbytes());
        }
      },
      run_on, reads, writes, options);
}

}  // namespace nanomx
