/* nanomx's C API: the one boundary every language binding crosses.
 *
 * Names and signatures follow MXNet 1.9.1 where MXNet has the function, so C code written
 * against MXNet links unchanged. Every function returns 0 on success and -1 on failure; the
 * message is then available from MXGetLastError() on the same thread. No C++ exception and no
 * abort ever crosses this boundary. Handles are opaque values from handle tables, never
 * reused; a stale, made-up or other-kind handle is an error (docs/c-api-handles.md). */
#ifndef NANOMX_C_API_H_
#define NANOMX_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "nanomx/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* ProfileHandle;
typedef void* KVStoreHandle;

/* The message of the last failed call on this thread. */
NANOMX_API const char* MXGetLastError(void);
/* Sets this thread's last-error message (MXNet's MXAPISetLastError): a callback the library
 * calls (a custom operator's) says why it failed before returning failure. */
NANOMX_API void MXAPISetLastError(const char* msg);

/* ---- Profiler (MXNet 1.9.1 c_api.h) ------------------------------------------------------ */
NANOMX_API int MXSetProcessProfilerConfig(int num_params, const char* const* keys,
                                          const char* const* vals, KVStoreHandle kvstoreHandle);
NANOMX_API int MXSetProfilerConfig(int num_params, const char* const* keys,
                                   const char* const* vals);
NANOMX_API int MXSetProcessProfilerState(int state, int profile_process,
                                         KVStoreHandle kvStoreHandle);
NANOMX_API int MXSetProfilerState(int state);
/* Not in 1.9.1 (MXNet master has it): sets the process-global memory-profiler scope. */
NANOMX_API int MXSetProfilerScope(const char* scope);
NANOMX_API int MXDumpProcessProfile(int finished, int profile_process, KVStoreHandle kvStoreHandle);
NANOMX_API int MXDumpProfile(int finished);
/* The default table (format table, sort by total, descending). */
NANOMX_API int MXAggregateProfileStatsPrint(const char** out_str, int reset);
/* format: 0 table, 1 json; sort_by: 0 total, 1 avg, 2 min, 3 max, 4 count. The string stays
 * valid until the next call on this thread. */
NANOMX_API int MXAggregateProfileStatsPrintEx(const char** out_str, int reset, int format,
                                              int sort_by, int ascending);
NANOMX_API int MXProcessProfilePause(int paused, int profile_process, KVStoreHandle kvStoreHandle);
NANOMX_API int MXProfilePause(int paused);
/* nanomx only (torch.profiler's step()): ends the current step and begins the next
 * (docs/profiler.md#step-schedules). When this step ends a step schedule's active window,
 * *out_finished_file (if out_finished_file is not NULL) is the path of the trace file just
 * finished, else "" (valid until the next call on this thread). */
NANOMX_API int MXProfileStep(const char** out_finished_file);
NANOMX_API int MXProfileCreateDomain(const char* domain, ProfileHandle* out);
NANOMX_API int MXProfileCreateTask(ProfileHandle domain, const char* task_name, ProfileHandle* out);
NANOMX_API int MXProfileCreateFrame(ProfileHandle domain, const char* frame_name,
                                    ProfileHandle* out);
NANOMX_API int MXProfileCreateEvent(const char* event_name, ProfileHandle* out);
NANOMX_API int MXProfileCreateCounter(ProfileHandle domain, const char* counter_name,
                                      ProfileHandle* out);
NANOMX_API int MXProfileDestroyHandle(ProfileHandle frame_handle);
NANOMX_API int MXProfileDurationStart(ProfileHandle duration_handle);
NANOMX_API int MXProfileDurationStop(ProfileHandle duration_handle);
NANOMX_API int MXProfileSetCounter(ProfileHandle counter_handle, uint64_t value);
NANOMX_API int MXProfileAdjustCounter(ProfileHandle counter_handle, int64_t by_value);
NANOMX_API int MXProfileSetMarker(ProfileHandle domain, const char* instant_marker_name,
                                  const char* scope);

#ifdef __cplusplus
}
#endif

/* NDArray, operators and the rest of the runtime. */
#include "nanomx/c_api_ndarray.h"
/* Symbolic graphs. */
#include "nanomx/c_api_symbol.h"
/* Autograd. */
#include "nanomx/c_api_autograd.h"
/* Custom operators. */
#include "nanomx/c_api_custom.h"
/* Executors: symbols bound to arrays. */
#include "nanomx/c_api_executor.h"
/* RecordIO, image decoding, the image pipeline, im2rec. */
#include "nanomx/c_api_io.h"
/* Key-value stores (local and distributed). */
#include "nanomx/c_api_kvstore.h"

#endif /* NANOMX_C_API_H_ */
