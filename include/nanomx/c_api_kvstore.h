/* nanomx's C API for key-value stores (MXNet 1.9.1 names and signatures; docs/kvstore.md).
 *
 * Included by nanomx/c_api.h. Every function returns 0 on success and -1 on failure, with the
 * message in MXGetLastError(). Array handles passed to an updater are new handles owned by the
 * updater (it frees them with MXNDArrayFree); the `local` one refers to the stored value, which
 * the updater overwrites. */
#ifndef NANOMX_C_API_KVSTORE_H_
#define NANOMX_C_API_KVSTORE_H_

#include "nanomx/c_api_ndarray.h"
#include "nanomx/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* KVStoreHandle;
typedef void(MXKVStoreUpdater)(int key, NDArrayHandle recv, NDArrayHandle local, void* handle);
typedef void(MXKVStoreStrUpdater)(const char* key, NDArrayHandle recv, NDArrayHandle local,
                                  void* handle);
typedef void(MXKVStoreServerController)(int head, const char* body, void* controller_handle);

/* type: local, device, dist_sync, dist_async, dist_device_sync (matched as MXNet, by substring;
 * an unknown name is an error). A dist type outside a launched job is an error saying how to
 * launch. */
NANOMX_API int MXKVStoreCreate(const char* type, KVStoreHandle* out);
NANOMX_API int MXKVStoreFree(KVStoreHandle handle);
NANOMX_API int MXKVStoreInit(KVStoreHandle handle, mx_uint num, const int* keys,
                             NDArrayHandle* vals);
NANOMX_API int MXKVStoreInitEx(KVStoreHandle handle, mx_uint num, const char** keys,
                               NDArrayHandle* vals);
NANOMX_API int MXKVStorePush(KVStoreHandle handle, mx_uint num, const int* keys,
                             NDArrayHandle* vals, int priority);
NANOMX_API int MXKVStorePushEx(KVStoreHandle handle, mx_uint num, const char** keys,
                               NDArrayHandle* vals, int priority);
NANOMX_API int MXKVStorePull(KVStoreHandle handle, mx_uint num, const int* keys,
                             NDArrayHandle* vals, int priority);
NANOMX_API int MXKVStorePullEx(KVStoreHandle handle, mx_uint num, const char** keys,
                               NDArrayHandle* vals, int priority);
/* updater for int keys, str_updater for string keys (may be null: then string keys reach
 * `updater` with their internal negative int). */
NANOMX_API int MXKVStoreSetUpdaterEx(KVStoreHandle handle, MXKVStoreUpdater updater,
                                     MXKVStoreStrUpdater str_updater, void* updater_handle);
NANOMX_API int MXKVStoreSetUpdater(KVStoreHandle handle, MXKVStoreUpdater updater,
                                   void* updater_handle);
NANOMX_API int MXKVStoreGetType(KVStoreHandle handle, const char** type);
NANOMX_API int MXKVStoreGetRank(KVStoreHandle handle, int* ret);
NANOMX_API int MXKVStoreGetGroupSize(KVStoreHandle handle, int* ret);
NANOMX_API int MXKVStoreBarrier(KVStoreHandle handle);
NANOMX_API int MXKVStoreIsWorkerNode(int* ret);
NANOMX_API int MXKVStoreIsServerNode(int* ret);
NANOMX_API int MXKVStoreIsSchedulerNode(int* ret);
/* Blocks in the server loop until worker rank 0 stops the servers (a server process only). */
NANOMX_API int MXKVStoreRunServer(KVStoreHandle handle, MXKVStoreServerController controller,
                                  void* controller_handle);
/* Blocks until every server replied; a server's error is this call's error. */
NANOMX_API int MXKVStoreSendCommmandToServers(KVStoreHandle handle, int cmd_id,
                                              const char* cmd_body);
/* nanomx extension: ends this process's part of a distributed job (a worker meets the other
 * workers and rank 0 stops the servers; MPI is finalised). clean=0 (the process is failing)
 * skips that, leaving the launcher to end the job. A no-op without a dist store. */
NANOMX_API int MXKVStoreShutdown(int clean);

#ifdef __cplusplus
}
#endif

#endif /* NANOMX_C_API_KVSTORE_H_ */
