#include "nanomx/dtype.h"

#include <bit>

#include "nanomx/error.h"

namespace nanomx {

uint16_t half::from_float(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // rounds to zero
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;  // 14..24
    uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  // normal: rebias exponent, round mantissa to nearest even
  uint32_t result = ((abs >> 13) - (112u << 10));
  const uint32_t remainder = abs & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

float half::to_float(uint16_t bits) {
  const uint32_t sign = (static_cast<uint32_t>(bits) & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t result;
  if (exponent == 0x1fu) {
    result = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    result = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    result = sign;
  } else {  // subnormal: normalize
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    result = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(result);
}

void invalid_dtype(DType dtype) { fail("invalid dtype code ", static_cast<int>(dtype)); }

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat16:
      return "float16";
    case DType::kUint8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt8:
      return "int8";
    case DType::kInt64:
      return "int64";
  }
  return "invalid";
}

bool dtype_valid(int32_t code) { return code >= 0 && code <= 6; }

DType parse_dtype(std::string_view name) {
  for (int32_t code = 0; code <= 6; ++code) {
    if (name == dtype_name(static_cast<DType>(code))) return static_cast<DType>(code);
  }
  NANOMX_THROW() << "unknown dtype '" << name
                 << "' (valid: float32, float64, float16, uint8, int32, int8, int64)";
  return DType::kFloat32;
}

}  // namespace nanomx
