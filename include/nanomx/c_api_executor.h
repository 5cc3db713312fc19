/* nanomx's C API for executors: a symbol bound to arrays (MXNet 1.9.1 names and signatures;
 * docs/symbolic.md, "Executor").
 *
 * Included by nanomx/c_api.h. Every function returns 0 on success and -1 on failure, with the
 * message in MXGetLastError(). Executors returned through ExecutorHandle* are released with
 * MXExecutorFree; array handles returned in lists are new handles owned by the caller (free each
 * with MXNDArrayFree); the lists themselves stay valid until the next call of the same function
 * on the same thread. Executor handles are checked like array handles (docs/c-api-handles.md).
 * Context groups (group2ctx) must be empty: one executor runs on one context. */
#ifndef NANOMX_C_API_EXECUTOR_H_
#define NANOMX_C_API_EXECUTOR_H_

#include <stdint.h>

#include "nanomx/c_api_ndarray.h"
#include "nanomx/c_api_symbol.h"
#include "nanomx/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* ExecutorHandle;

/* Binds `symbol` to the caller's arrays (used as given, no copy): `len` arguments in
 * list_arguments() order, their gradient arrays (NULL entries, or a NULL list: no gradient) and
 * grad_req codes (0 null, 1 write, 2 write in place (= write), 3 add); aux states likewise.
 * shared_exec is accepted and ignored. */
NANOMX_API int MXExecutorBindEX(SymbolHandle symbol_handle, int dev_type, int dev_id,
                                uint32_t num_map_keys, const char** map_keys,
                                const int* map_dev_types, const int* map_dev_ids, uint32_t len,
                                NDArrayHandle* in_args, NDArrayHandle* arg_grad_store,
                                uint32_t* grad_req_type, uint32_t aux_states_len,
                                NDArrayHandle* aux_states, ExecutorHandle shared_exec,
                                ExecutorHandle* out);

/* MXNet's simple_bind: shapes (provided_arg_shape_data, with num + 1 offsets in
 * provided_arg_shape_idx) and dtypes of some arguments, the rest inferred; zero-filled
 * arguments, gradients and aux states are returned as new handles (NULL gradient where the req
 * is null). grad_req: provided_grad_req_list_len 0 with one type: that req for every argument;
 * names NULL: one type per argument; otherwise by name, unlisted arguments "null". Storage types
 * must be default; shared arguments and buffers must be empty. */
NANOMX_API int MXExecutorSimpleBindEx(
    SymbolHandle symbol_handle, int dev_type, int dev_id, uint32_t num_g2c_keys,
    const char** g2c_keys, const int* g2c_dev_types, const int* g2c_dev_ids,
    uint32_t provided_grad_req_list_len, const char** provided_grad_req_names,
    const char** provided_grad_req_types, uint32_t num_provided_arg_shapes,
    const char** provided_arg_shape_names, const int* provided_arg_shape_data,
    const uint32_t* provided_arg_shape_idx, uint32_t num_provided_arg_dtypes,
    const char** provided_arg_dtype_names, const int* provided_arg_dtypes,
    uint32_t num_provided_arg_stypes, const char** provided_arg_stype_names,
    const int* provided_arg_stypes, uint32_t num_shared_arg_names,
    const char** shared_arg_name_list, int* shared_buffer_len, const char** shared_buffer_name_list,
    NDArrayHandle* shared_buffer_handle_list, const char*** updated_shared_buffer_name_list,
    NDArrayHandle** updated_shared_buffer_handle_list, uint32_t* num_in_args,
    NDArrayHandle** in_args, NDArrayHandle** arg_grads, uint32_t* num_aux_states,
    NDArrayHandle** aux_states, ExecutorHandle shared_exec_handle, ExecutorHandle* out);

NANOMX_API int MXExecutorForward(ExecutorHandle handle, int is_train);
/* head_grads: one per output (NULL entries: none given), or len 0. */
NANOMX_API int MXExecutorBackward(ExecutorHandle handle, uint32_t len, NDArrayHandle* head_grads);
NANOMX_API int MXExecutorBackwardEx(ExecutorHandle handle, uint32_t len, NDArrayHandle* head_grads,
                                    int is_train);
/* New handles of the output arrays (the same arrays at every call). */
NANOMX_API int MXExecutorOutputs(ExecutorHandle handle, uint32_t* out_size, NDArrayHandle** out);
/* The forward and backward graph and MXNet's "Total N MB allocated" lines. */
NANOMX_API int MXExecutorPrint(ExecutorHandle handle, const char** out_str);
NANOMX_API int MXExecutorFree(ExecutorHandle handle);
/* A new executor for new argument shapes, sharing the old one's memory where it fits. */
NANOMX_API int MXExecutorReshapeEx(int partial_shaping, int allow_up_sizing, int dev_type,
                                   int dev_id, uint32_t num_map_keys, const char** map_keys,
                                   const int* map_dev_types, const int* map_dev_ids,
                                   uint32_t num_provided_arg_shapes,
                                   const char** provided_arg_shape_names,
                                   const int* provided_arg_shape_data,
                                   const uint32_t* provided_arg_shape_idx, uint32_t* num_in_args,
                                   NDArrayHandle** in_args, NDArrayHandle** arg_grads,
                                   uint32_t* num_aux_states, NDArrayHandle** aux_states,
                                   ExecutorHandle shared_exec, ExecutorHandle* out);

/* nanomx only: the planned pool in MXNet's count (4 bytes an element, what debug_str reports),
 * the bytes actually allocated, and per output whether backward needs a head gradient (a list
 * of num_outputs ints, valid until the next call on this thread). */
NANOMX_API int NNExecutorGetInfo(ExecutorHandle handle, uint64_t* planned_bytes,
                                 uint64_t* allocated_bytes, uint32_t* num_outputs,
                                 const int** head_grad_needed);

#ifdef __cplusplus
}
#endif

#endif /* NANOMX_C_API_EXECUTOR_H_ */
