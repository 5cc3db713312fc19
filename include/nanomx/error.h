// nanomx::Error, the one exception type of the runtime, and NANOMX_CHECK.
//
// Every message says what went wrong, where, and what was expected. The C API turns an Error
// (or any std::exception) into a -1 return plus MXGetLastError(); nothing crosses that boundary.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
// Collects a message with operator<< and throws it as nanomx::Error when destroyed at the end of
// the full expression. Used only through NANOMX_CHECK / NANOMX_THROW.
class ErrorBuilder {
 public:
  ErrorBuilder() = default;
  ErrorBuilder(const ErrorBuilder&) = delete;
  ErrorBuilder& operator=(const ErrorBuilder&) = delete;
  ~ErrorBuilder() noexcept(false) { throw Error(stream_.str()); }
  template <typename T>
  ErrorBuilder& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};
}  // namespace detail

// Throws nanomx::Error with the parts streamed together: fail("bad shape ", shape, " for ", op).
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream stream;
  (stream << ... << parts);
  throw Error(stream.str());
}

}  // namespace nanomx

// NANOMX_CHECK(cond) << "what was expected"; throws nanomx::Error when cond is false.
#define NANOMX_CHECK(cond) \
  if (cond) {              \
  } else                   \
    ::nanomx::detail::ErrorBuilder()

// NANOMX_THROW() << "message"; always throws nanomx::Error.
#define NANOMX_THROW() ::nanomx::detail::ErrorBuilder()

#pragma GCC visibility pop
