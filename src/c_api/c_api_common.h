// Shared by every c_api_<layer>.cc: the try/catch frame that keeps C++ exceptions from crossing
// the C boundary, the last-error store behind MXGetLastError, and API-call profiling.
//
//   int MXFoo(int x) {
//     NANOMX_API_BEGIN(MXFoo);     // profiled as an API call named "MXFoo" when profile_api is on
//     ...                          // throw nanomx::Error (NANOMX_CHECK) on bad input
//     NANOMX_API_END();            // returns 0, or -1 with the message kept for MXGetLastError
//   }
#pragma once

#include <string>

#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "profiler/hooks.h"

namespace nanomx::c_api {
// Stores the message of the exception being handled (call only inside a catch block) for
// MXGetLastError on this thread, and returns -1.
int translate_current_exception() noexcept;
// Throws nanomx::Error "<function>: <what> must not be null" when pointer is null.
void check_not_null(const void* pointer, const char* function, const char* what);
}  // namespace nanomx::c_api

#define NANOMX_API_BEGIN(function)                                                  \
  static const ::nanomx::profiler::NameId nanomx_api_function_name =                \
      ::nanomx::profiler::intern(#function);                                        \
  ::nanomx::profiler::ApiCallScope nanomx_api_call_scope(nanomx_api_function_name); \
  try {
// For the profiler-control functions, which MXNet excludes from API profiling.
#define NANOMX_API_BEGIN_UNPROFILED() try {
#define NANOMX_API_END()                                   \
  }                                                        \
  catch (...) {                                            \
    return ::nanomx::c_api::translate_current_exception(); \
  }                                                        \
  return 0

namespace nanomx::c_api {
// Server-side profiling (profile_process=server) travels through the distributed KVStore as
// MXNet's kSetProfilerParams command: `body` is the payload plus the sub-command digit
// (docs/kvstore.md). The kvstore layer installs the sender; without one, server requests fail
// clearly.
using ServerProfilerSender = void (*)(void* kvstore, const std::string& body);
void set_server_profiler_sender(ServerProfilerSender sender);
}  // namespace nanomx::c_api
