/* nanomx's C API for arrays and imperative operators (MXNet 1.9.1 names and signatures).
 *
 * Included by nanomx/c_api.h. Every function returns 0 on success and -1 on failure, with the
 * message in MXGetLastError(). Arrays returned through NDArrayHandle* are owned by the caller
 * and released with MXNDArrayFree. Pointers to arrays of results (shapes, handle lists, names,
 * byte buffers) stay valid until the next call of the same function on the same thread.
 * Handles are opaque values, not pointers: a freed, made-up or other-kind handle is refused with
 * an error naming the function and argument, and no handle value is ever given out twice
 * (docs/c-api-handles.md). */
#ifndef NANOMX_C_API_NDARRAY_H_
#define NANOMX_C_API_NDARRAY_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nanomx/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef NANOMX_DLL
#endif

typedef unsigned int mx_uint;
typedef int64_t dim_t;
typedef void* NDArrayHandle;
typedef void* OpHandle;
typedef void* AtomicSymbolCreator;

/* ---- Arrays --------------------------------------------------------------------------------- */
/* An array without shape or storage (the target of MXNDArrayLoadFromRawBytes-style calls). */
NANOMX_API int MXNDArrayCreateNone(NDArrayHandle* out);
/* dev_type: 1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared; dtype: MXNet's type flag (0 float32, 1
 * float64, 2 float16, 3 uint8, 4 int32, 5 int8, 6 int64). delay_alloc is accepted; the array
 * is allocated at once either way (docs/mxnet-compat.md#c-api). ndim is at most 32. */
/* The element types this library supports (a nanomx extension; MXNet has no such call), so that
 * bindings build their dtype tables from the library instead of copying them: *out_size entries,
 * in type-code order, of MXNet's type code, the name (as numpy spells it: "float32", ...) and the
 * element size in bytes. The arrays are the library's and stay valid while it is loaded. */
NANOMX_API int MXGetDTypeTable(mx_uint* out_size, const int** out_codes, const char*** out_names,
                               const mx_uint** out_sizes);
NANOMX_API int MXNDArrayCreateEx(const mx_uint* shape, mx_uint ndim, int dev_type, int dev_id,
                                 int delay_alloc, int dtype, NDArrayHandle* out);
NANOMX_API int MXNDArrayFree(NDArrayHandle handle);
/* The shape (ndim 0 for a none array, as MXNet 1.x's legacy shape mode). */
NANOMX_API int MXNDArrayGetShapeEx(NDArrayHandle handle, int* out_dim, const int** out_pdata);
NANOMX_API int MXNDArrayGetShapeEx64(NDArrayHandle handle, int* out_dim, const int64_t** out_pdata);
NANOMX_API int MXNDArrayGetDType(NDArrayHandle handle, int* out_dtype);
NANOMX_API int MXNDArrayGetContext(NDArrayHandle handle, int* out_dev_type, int* out_dev_id);
/* `size` counts elements (not bytes) and must equal the array's size. */
NANOMX_API int MXNDArraySyncCopyFromCPU(NDArrayHandle handle, const void* data, size_t size);
NANOMX_API int MXNDArraySyncCopyToCPU(NDArrayHandle handle, void* data, size_t size);
NANOMX_API int MXNDArrayWaitToRead(NDArrayHandle handle);
NANOMX_API int MXNDArrayWaitToWrite(NDArrayHandle handle);
NANOMX_API int MXNDArrayWaitAll(void);
/* Views sharing storage: rows [slice_begin, slice_end) of axis 0; row idx; another shape (MXNet's
 * Reshape codes 0, -1, -2, -3, -4; `reverse` matches them from the right). */
NANOMX_API int MXNDArraySlice(NDArrayHandle handle, mx_uint slice_begin, mx_uint slice_end,
                              NDArrayHandle* out);
NANOMX_API int MXNDArrayAt(NDArrayHandle handle, mx_uint idx, NDArrayHandle* out);
NANOMX_API int MXNDArrayReshape64(NDArrayHandle handle, int ndim, dim_t* dims, bool reverse,
                                  NDArrayHandle* out);

/* ---- Save / load (.params: magic 0x112; the single-array blob used by pickling) ------------- */
/* keys: NULL for a list, else num_args names. */
NANOMX_API int MXNDArraySave(const char* fname, mx_uint num_args, NDArrayHandle* args,
                             const char** keys);
NANOMX_API int MXNDArrayLoad(const char* fname, mx_uint* out_size, NDArrayHandle** out_arr,
                             mx_uint* out_name_size, const char*** out_names);
NANOMX_API int MXNDArraySaveRawBytes(NDArrayHandle handle, size_t* out_size, const char** out_buf);
NANOMX_API int MXNDArrayLoadFromRawBytes(const void* buf, size_t size, NDArrayHandle* out);

/* ---- Operators ------------------------------------------------------------------------------ */
NANOMX_API int MXListAllOpNames(mx_uint* out_size, const char*** out_array);
NANOMX_API int NNGetOpHandle(const char* op_name, OpHandle* op_out);
/* What bindings need to generate a function per operator: its registered name, its array
 * arguments ("NDArray-or-Symbol") followed by its attributes ("string": every attribute arrives
 * as text and the operator parses it), in the order positional arguments take them.
 * key_var_num_args is "" (no operator takes a variable number of inputs) and return_type is
 * "NDArray-or-Symbol"; description and arg_descriptions say which kind each argument is. */
NANOMX_API int MXSymbolGetAtomicSymbolInfo(AtomicSymbolCreator creator, const char** name,
                                           const char** description, mx_uint* num_args,
                                           const char*** arg_names, const char*** arg_type_infos,
                                           const char*** arg_descriptions,
                                           const char** key_var_num_args, const char** return_type);
/* With *outputs NULL the outputs are new arrays: *num_outputs and *outputs are set (the list
 * stays valid until the next call on this thread; each handle is the caller's to free). With
 * *outputs given, the results are written into those arrays. */
NANOMX_API int MXImperativeInvoke(AtomicSymbolCreator creator, int num_inputs,
                                  NDArrayHandle* inputs, int* num_outputs, NDArrayHandle** outputs,
                                  int num_params, const char** param_keys, const char** param_vals);
NANOMX_API int MXRandomSeed(int seed);
/* The GPUs this process can use: 0 in a build without CUDA or when no GPU is visible. */
NANOMX_API int MXGetGPUCount(int* out);
/* Free and total bytes of gpu(dev); fails, saying why, unless 0 <= dev < MXGetGPUCount. */
NANOMX_API int MXGetGPUMemoryInformation64(int dev, uint64_t* free_mem, uint64_t* total_mem);

#ifdef __cplusplus
}
#endif

#endif /* NANOMX_C_API_NDARRAY_H_ */
