/* nanomx's C API for custom operators: MXNet 1.9.1's MXCustomOpRegister and its callback ABI
 * (docs/symbolic.md, "Custom operators").
 *
 * Included by nanomx/c_api.h. A registered creator is called once per Custom call's attributes
 * and fills an MXCallbackList with the property callbacks (indexed by CustomOpPropCallbacks;
 * every context is passed back as the callback's `state`); kCustomOpPropCreateOperator fills
 * another list with the operator callbacks (CustomOpCallbacks). Every callback returns nonzero
 * on success and 0 on failure (the call then fails with an error naming the operator and the
 * callback). Array pointers handed to forward/backward are new NDArrayHandles the callee owns
 * (and frees with MXNDArrayFree); tags say what each is: 0 input, 1 output, 2 input gradient,
 * 3 output gradient, 4 auxiliary state. */
#ifndef NANOMX_C_API_CUSTOM_H_
#define NANOMX_C_API_CUSTOM_H_

#include "nanomx/c_api_ndarray.h"
#include "nanomx/export.h"

#ifdef __cplusplus
extern "C" {
#endif

struct MXCallbackList {
  int num_callbacks;
  int (**callbacks)(void);
  void** contexts;
};

enum CustomOpCallbacks { kCustomOpDelete, kCustomOpForward, kCustomOpBackward };

enum CustomOpPropCallbacks {
  kCustomOpPropDelete,
  kCustomOpPropListArguments,
  kCustomOpPropListOutputs,
  kCustomOpPropListAuxiliaryStates,
  kCustomOpPropInferShape,
  kCustomOpPropDeclareBackwardDependency,
  kCustomOpPropCreateOperator,
  kCustomOpPropInferType,
  kCustomOpPropInferStorageType,
  kCustomOpPropBackwardInferStorageType
};

typedef int (*CustomOpFBFunc)(int /*size*/, void** /*ptrs*/, int* /*tags*/, const int* /*reqs*/,
                              const int /*is_train*/, void* /*state*/);
typedef int (*CustomOpDelFunc)(void* /*state*/);
/* *args: a NULL-terminated list of names, owned by the callee (valid until its next call). */
typedef int (*CustomOpListFunc)(char*** /*args*/, void* /*state*/);
/* num_input = arguments + outputs + auxiliary states; the first (arguments) are given, the
 * callee sets every ndims[i] and shapes[i] (its own memory, valid until its next call). */
typedef int (*CustomOpInferShapeFunc)(int /*num_input*/, int* /*ndims*/, int** /*shapes*/,
                                      void* /*state*/);
typedef int (*CustomOpInferTypeFunc)(int /*num_input*/, int* /*types*/, void* /*state*/);
typedef int (*CustomOpBwdDepFunc)(const int* /*out_grad*/, const int* /*in_data*/,
                                  const int* /*out_data*/, int* /*num_deps*/, int** /*rdeps*/,
                                  void* /*state*/);
typedef int (*CustomOpCreateFunc)(const char* /*ctx*/, int /*num_inputs*/, unsigned** /*shapes*/,
                                  const int* /*ndims*/, const int* /*dtypes*/,
                                  struct MXCallbackList* /*ret*/, void* /*state*/);
typedef int (*CustomOpPropCreator)(const char* /*op_type*/, const int /*num_kwargs*/,
                                   const char** /*keys*/, const char** /*values*/,
                                   struct MXCallbackList* /*ret*/);

/* Registers op_type for Custom(op_type=...); a second registration replaces the first. */
NANOMX_API int MXCustomOpRegister(const char* op_type, CustomOpPropCreator creator);

#ifdef __cplusplus
}
#endif

#endif /* NANOMX_C_API_CUSTOM_H_ */
