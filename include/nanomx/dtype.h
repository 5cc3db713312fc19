// Element types of an NDArray, with MXNet's type codes, and float16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx {

// MXNet's type_flag values (mshadow): the codes written into .params files.
enum class DType : int32_t {
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kUint8 = 3,
  kInt32 = 4,
  kInt8 = 5,
  kInt64 = 6,
};

// IEEE 754 binary16, stored as its bits. Arithmetic goes through float (as MXNet on CPU).
struct half {
  uint16_t bits = 0;
  half() = default;
  explicit half(float value) : bits(from_float(value)) {}
  explicit operator float() const { return to_float(bits); }
  static uint16_t from_float(float value);
  static float to_float(uint16_t bits);
};
static_assert(sizeof(half) == 2);

// Bytes per element; throws for a code outside DType. Inline: every operator call asks.
[[noreturn]] void invalid_dtype(DType dtype);
inline size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat16:
      return 2;
    case DType::kUint8:
    case DType::kInt8:
      return 1;
  }
  invalid_dtype(dtype);
}
// "float32", "float64", "float16", "uint8", "int32", "int8", "int64".
const char* dtype_name(DType dtype);
// True for a code this runtime supports.
bool dtype_valid(int32_t code);
// Parses a dtype name (as MXNet's attributes spell it); throws naming the valid names.
DType parse_dtype(std::string_view name);

// The C++ element type of each DType.
template <DType D>
struct DTypeTraits;
template <>
struct DTypeTraits<DType::kFloat32> {
  using type = float;
};
template <>
struct DTypeTraits<DType::kFloat64> {
  using type = double;
};
template <>
struct DTypeTraits<DType::kFloat16> {
  using type = half;
};
template <>
struct DTypeTraits<DType::kUint8> {
  using type = uint8_t;
};
template <>
struct DTypeTraits<DType::kInt32> {
  using type = int32_t;
};
template <>
struct DTypeTraits<DType::kInt8> {
  using type = int8_t;
};
template <>
struct DTypeTraits<DType::kInt64> {
  using type = int64_t;
};

// Calls fn(T{}) with T the element type of dtype: `dispatch_dtype(d, [&](auto tag) { using T =
// decltype(tag); ... })`.
template <typename Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(float{});
    case DType::kFloat64:
      return fn(double{});
    case DType::kFloat16:
      return fn(half{});
    case DType::kUint8:
      return fn(uint8_t{});
    case DType::kInt32:
      return fn(int32_t{});
    case DType::kInt8:
      return fn(int8_t{});
    case DType::kInt64:
      return fn(int64_t{});
  }
  return fn(float{});  // unreachable for a valid DType
}

// The type arithmetic is done in: float for half, the type itself otherwise.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<half> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;
// float16, float32 and float64 (the element types that are floating point).
template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T> || std::is_same_v<T, half>;

template <typename T>
inline compute_t<T> to_compute(T value) {
  if constexpr (std::is_same_v<T, half>) {
    return static_cast<float>(value);
  } else {
    return value;
  }
}

// Converts a double to T as numpy's astype does on x86: floats round, integers truncate toward
// zero and wrap modulo 2^bits (values outside int64 and NaN become INT64_MIN first).
template <typename T>
inline T from_double(double value) {
  if constexpr (std::is_same_v<T, half>) {
    return half(static_cast<float>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else {
    int64_t wide;
    if (value >= -9223372036854775808.0 && value < 9223372036854775808.0) {
      wide = static_cast<int64_t>(value);
    } else {
      wide = INT64_MIN;
    }
    return static_cast<T>(static_cast<uint64_t>(wide));
  }
}

template <typename T>
inline double to_double(T value) {
  if constexpr (std::is_same_v<T, half>) {
    return static_cast<float>(value);
  } else {
    return static_cast<double>(value);
  }
}

}  // namespace nanomx

#pragma GCC visibility pop
