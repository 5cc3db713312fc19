// Error text and kind names of the handle tables (handle_table.h).
#include "c_api/handle_table.h"

#include <cstdio>
#include <sstream>
#include <string_view>

namespace nanomx::c_api {

const char* handle_kind_name(uint8_t kind) noexcept {
  switch (static_cast<HandleKind>(kind)) {
    case HandleKind::kNDArray:
      return "NDArray";
    case HandleKind::kProfileObject:
      return "profiler object";
    case HandleKind::kOp:
      return "operator";
    case HandleKind::kSymbol:
      return "symbol";
    case HandleKind::kExecutor:
      return "executor";
    case HandleKind::kDataIter:
      return "data iterator";
    case HandleKind::kKVStore:
      return "KVStore";
    case HandleKind::kRecordIO:
      return "RecordIO";
  }
  return "unknown";
}

namespace {
const char* article(uint8_t kind) {
  switch (static_cast<HandleKind>(kind)) {
    case HandleKind::kNDArray:
    case HandleKind::kOp:
    case HandleKind::kExecutor:
      return "an";
    default:
      return "a";
  }
}
}  // namespace

void throw_bad_handle(const void* handle, HandleKind expected, bool stale, const char* function,
                      const char* argument) {
  const uint64_t value = handle_bits::value_of(handle);
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(value));
  const uint8_t kind = handle_bits::kind_of(value);
  const char* expected_name = handle_kind_name(static_cast<uint8_t>(expected));
  std::ostringstream error;
  error << function << ": " << argument << " is a stale or unknown " << expected_name << " handle "
        << hex;
  if (stale) {
    error << " (it was freed or destroyed already)";
  } else if (kind != static_cast<uint8_t>(expected) &&
             std::string_view(handle_kind_name(kind)) != "unknown") {
    error << " (it is " << article(kind) << " " << handle_kind_name(kind) << " handle, not "
          << article(static_cast<uint8_t>(expected)) << " " << expected_name << " handle)";
  } else {
    error << " (never given out by this library)";
  }
  throw nanomx::Error(error.str());
}

}  // namespace nanomx::c_api
