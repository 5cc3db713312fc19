#include <exception>
#include <string>

#include "c_api/c_api_common.h"
#include "nanomx/c_api.h"

namespace nanomx::c_api {
namespace {
thread_local std::string last_error;
}

int translate_current_exception() noexcept {
  try {
    throw;
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown C++ exception";
  }
  return -1;
}

void check_not_null(const void* pointer, const char* function, const char* what) {
  NANOMX_CHECK(pointer != nullptr) << function << ": " << what << " must not be null";
}
}  // namespace nanomx::c_api

const char* MXGetLastError() { return nanomx::c_api::last_error.c_str(); }

void MXAPISetLastError(const char* msg) { nanomx::c_api::last_error = msg == nullptr ? "" : msg; }
