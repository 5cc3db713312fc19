/* nanomx's C API for symbolic graphs (MXNet 1.9.1 names and signatures; docs/symbolic.md).
 *
 * Included by nanomx/c_api.h. Every function returns 0 on success and -1 on failure, with the
 * message in MXGetLastError(). Symbols returned through SymbolHandle* are owned by the caller
 * and released with MXSymbolFree. Returned strings and lists stay valid until the next call of
 * the same function on the same thread. Symbol handles are checked like array handles
 * (docs/c-api-handles.md): a freed or made-up handle is refused with an error. */
#ifndef NANOMX_C_API_SYMBOL_H_
#define NANOMX_C_API_SYMBOL_H_

#include <stdint.h>

#include "nanomx/c_api_ndarray.h"
#include "nanomx/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* SymbolHandle;

NANOMX_API int MXSymbolCreateVariable(const char* name, SymbolHandle* out);
/* An operator node without inputs; keys/vals are its attributes as text (validated here). */
NANOMX_API int MXSymbolCreateAtomicSymbol(AtomicSymbolCreator creator, uint32_t num_param,
                                          const char** keys, const char** vals, SymbolHandle* out);
/* Fills the inputs of `sym` in place: keys NULL = positional, else by input name. */
NANOMX_API int MXSymbolCompose(SymbolHandle sym, const char* name, uint32_t num_args,
                               const char** keys, SymbolHandle* args);
NANOMX_API int MXSymbolCreateGroup(uint32_t num_symbols, SymbolHandle* symbols, SymbolHandle* out);
NANOMX_API int MXSymbolCopy(SymbolHandle symbol, SymbolHandle* out);
NANOMX_API int MXSymbolFree(SymbolHandle symbol);
NANOMX_API int MXSymbolPrint(SymbolHandle symbol, const char** out_str);
/* The head node's name; *success 0 for a group of several nodes. */
NANOMX_API int MXSymbolGetName(SymbolHandle symbol, const char** out, int* success);
NANOMX_API int MXSymbolListArguments(SymbolHandle symbol, uint32_t* out_size,
                                     const char*** out_str_array);
NANOMX_API int MXSymbolListOutputs(SymbolHandle symbol, uint32_t* out_size,
                                   const char*** out_str_array);
NANOMX_API int MXSymbolListAuxiliaryStates(SymbolHandle symbol, uint32_t* out_size,
                                           const char*** out_str_array);
NANOMX_API int MXSymbolGetNumOutputs(SymbolHandle symbol, uint32_t* output_count);
NANOMX_API int MXSymbolGetInternals(SymbolHandle symbol, SymbolHandle* out);
/* The head's inputs as a group; *out is NULL when it has none. */
NANOMX_API int MXSymbolGetChildren(SymbolHandle symbol, SymbolHandle* out);
NANOMX_API int MXSymbolGetOutput(SymbolHandle symbol, uint32_t index, SymbolHandle* out);
/* *success 0 when the key is absent. */
NANOMX_API int MXSymbolGetAttr(SymbolHandle symbol, const char* key, const char** out,
                               int* success);
NANOMX_API int MXSymbolSetAttr(SymbolHandle symbol, const char* key, const char* value);
/* 2 * *out_size strings: key, value, ...; keys are "node$key" for every node. */
NANOMX_API int MXSymbolListAttr(SymbolHandle symbol, uint32_t* out_size, const char*** out);
/* As MXSymbolListAttr for the head node alone, plain keys. */
NANOMX_API int MXSymbolListAttrShallow(SymbolHandle symbol, uint32_t* out_size, const char*** out);
NANOMX_API int MXSymbolSaveToJSON(SymbolHandle symbol, const char** out_json);
NANOMX_API int MXSymbolCreateFromJSON(const char* json, SymbolHandle* out);
NANOMX_API int MXSymbolSaveToFile(SymbolHandle symbol, const char* fname);
NANOMX_API int MXSymbolCreateFromFile(const char* fname, SymbolHandle* out);
/* Shapes of arguments: keys NULL = positional (list_arguments order), else by name; shape i is
 * arg_shape_data[arg_ind_ptr[i] .. arg_ind_ptr[i+1]), a 0 an unknown dimension. Results per
 * argument / output / aux state: ndim (0 = unknown) and dims (0 = unknown); *complete 1 when
 * every shape in the graph is known. MXSymbolInferShape fails on an incomplete result only
 * through *complete, as MXNet does; the Partial form is the same call. */
NANOMX_API int MXSymbolInferShape(SymbolHandle sym, uint32_t num_args, const char** keys,
                                  const uint32_t* arg_ind_ptr, const int* arg_shape_data,
                                  uint32_t* in_shape_size, const int** in_shape_ndim,
                                  const int*** in_shape_data, uint32_t* out_shape_size,
                                  const int** out_shape_ndim, const int*** out_shape_data,
                                  uint32_t* aux_shape_size, const int** aux_shape_ndim,
                                  const int*** aux_shape_data, int* complete);
NANOMX_API int MXSymbolInferShapePartial(SymbolHandle sym, uint32_t num_args, const char** keys,
                                         const uint32_t* arg_ind_ptr, const int* arg_shape_data,
                                         uint32_t* in_shape_size, const int** in_shape_ndim,
                                         const int*** in_shape_data, uint32_t* out_shape_size,
                                         const int** out_shape_ndim, const int*** out_shape_data,
                                         uint32_t* aux_shape_size, const int** aux_shape_ndim,
                                         const int*** aux_shape_data, int* complete);
/* Type flags (MXNet's; -1 = unknown), same protocol as MXSymbolInferShape. */
NANOMX_API int MXSymbolInferType(SymbolHandle sym, uint32_t num_args, const char** keys,
                                 const int* arg_type_data, uint32_t* in_type_size,
                                 const int** in_type_data, uint32_t* out_type_size,
                                 const int** out_type_data, uint32_t* aux_type_size,
                                 const int** aux_type_data, int* complete);

#ifdef __cplusplus
}
#endif

#endif /* NANOMX_C_API_SYMBOL_H_ */
