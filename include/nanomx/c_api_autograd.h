/* nanomx's C API for autograd (MXNet 1.9.1 names and signatures; docs/symbolic.md, "Autograd").
 *
 * Included by nanomx/c_api.h. Every function returns 0 on success and -1 on failure, with the
 * message in MXGetLastError(). The recording and training flags are per thread. */
#ifndef NANOMX_C_API_AUTOGRAD_H_
#define NANOMX_C_API_AUTOGRAD_H_

#include <stdbool.h>

#include "nanomx/c_api_ndarray.h"
#include "nanomx/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Set the flag; *prev receives the previous value (0 or 1). */
NANOMX_API int MXAutogradSetIsRecording(int is_recording, int* prev);
NANOMX_API int MXAutogradSetIsTraining(int is_training, int* prev);
NANOMX_API int MXAutogradIsRecording(bool* curr);
NANOMX_API int MXAutogradIsTraining(bool* curr);
/* Makes each variable a fresh graph leaf with gradient buffer grad_handles[i] and request
 * reqs_array[i] (0 null, 1 write, 3 add). */
NANOMX_API int MXAutogradMarkVariables(mx_uint num_var, NDArrayHandle* var_handles,
                                       mx_uint* reqs_array, NDArrayHandle* grad_handles);
/* Backward from num_output heads. ograd_handles: NULL, or one per head (a NULL entry: ones).
 * With num_variables 0 the marked leaves' gradient buffers are written (or added to); otherwise
 * *grad_handles receives one new array per variable (the caller frees them; the list stays
 * valid until the next call on this thread) and no buffer is touched. grad_stypes, when not
 * NULL, receives one storage type per variable (always 0, dense). create_graph must be 0. */
NANOMX_API int MXAutogradBackwardEx(mx_uint num_output, NDArrayHandle* output_handles,
                                    NDArrayHandle* ograd_handles, mx_uint num_variables,
                                    NDArrayHandle* var_handles, int retain_graph, int create_graph,
                                    int is_train, NDArrayHandle** grad_handles, int** grad_stypes);
NANOMX_API int MXAutogradBackward(mx_uint num_output, NDArrayHandle* output_handles,
                                  NDArrayHandle* ograd_handles, int retain_graph);
/* The gradient buffer of a marked variable as a new handle (same storage), or *out = NULL. */
NANOMX_API int MXNDArrayGetGrad(NDArrayHandle handle, NDArrayHandle* out);
/* A new handle to the same data without autograd history. */
NANOMX_API int MXNDArrayDetach(NDArrayHandle handle, NDArrayHandle* out);

#ifdef __cplusplus
}
#endif

#endif /* NANOMX_C_API_AUTOGRAD_H_ */
