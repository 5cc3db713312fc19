/* nanomx's C API for data input: RecordIO files (MXNet 1.9.1's MXRecordIO* names and
 * signatures), image decoding, encoding and resizing, the threaded image pipeline behind
 * mx.img.ImageIter and mx.io.ImageRecordIter, and im2rec (docs/io.md).
 *
 * Included by nanomx/c_api.h. Every function returns 0 on success and -1 on failure, with the
 * message in MXGetLastError(). Buffers returned through `const char**` stay valid until the next
 * call of a function on the same handle (readers) or on the same thread (encode). */
#ifndef NANOMX_C_API_IO_H_
#define NANOMX_C_API_IO_H_

#include <stddef.h>
#include <stdint.h>

#include "nanomx/c_api_ndarray.h"
#include "nanomx/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* RecordIOHandle;
typedef void* DataIterHandle;

/* RecordIO writer: creating truncates `uri`; tell is the offset where the next record starts. */
NANOMX_API int MXRecordIOWriterCreate(const char* uri, RecordIOHandle* out);
NANOMX_API int MXRecordIOWriterFree(RecordIOHandle handle);
NANOMX_API int MXRecordIOWriterWriteRecord(RecordIOHandle handle, const char* buf, size_t size);
NANOMX_API int MXRecordIOWriterTell(RecordIOHandle handle, size_t* pos);
/* RecordIO reader: *buf is NULL (and *size 0) at the end of the file. */
NANOMX_API int MXRecordIOReaderCreate(const char* uri, RecordIOHandle* out);
NANOMX_API int MXRecordIOReaderFree(RecordIOHandle handle);
NANOMX_API int MXRecordIOReaderReadRecord(RecordIOHandle handle, const char** buf, size_t* size);
NANOMX_API int MXRecordIOReaderSeek(RecordIOHandle handle, size_t pos);
NANOMX_API int MXRecordIOReaderTell(RecordIOHandle handle, size_t* pos);

/* Decodes an image (flag 1 colour, 0 gray, -1 unchanged; to_rgb swaps OpenCV's BGR) into a new
 * uint8 (H, W, C) array. */
NANOMX_API int NNImageDecode(const void* buf, size_t size, int flag, int to_rgb,
                             NDArrayHandle* out);
/* Encodes a uint8 (H, W, C) host image, C 1, 3 (BGR) or 4, as ext (".jpg", ".jpeg", ".png") with
 * quality (JPEG 0-100; PNG compression 0-9). */
NANOMX_API int NNImageEncode(const void* pixels, int height, int width, int channels,
                             const char* ext, int quality, const char** out_buf, size_t* out_size);
/* Resizes a uint8 or float32 (H, W, C) array to (h, w, C); interp as OpenCV's INTER_* (0-4). */
NANOMX_API int NNImageResize(NDArrayHandle src, int w, int h, int interp, NDArrayHandle* out);

/* The image pipeline, configured by string keys and values (docs/io.md lists them). */
NANOMX_API int NNImageIterCreate(uint32_t num_param, const char** keys, const char** vals,
                                 DataIterHandle* out);
NANOMX_API int NNImageIterFree(DataIterHandle handle);
/* The next batch: *has_next 0 at the end of the epoch; otherwise new array handles (free each
 * with MXNDArrayFree) and the number of filler images at the end of the batch. */
NANOMX_API int NNImageIterNext(DataIterHandle handle, int* has_next, NDArrayHandle* data,
                               NDArrayHandle* label, int* pad);
/* Starts the next epoch; hard also drops a rolled-over partial batch. */
NANOMX_API int NNImageIterReset(DataIterHandle handle, int hard);
NANOMX_API int NNImageIterNumItems(DataIterHandle handle, uint64_t* count);

/* im2rec with MXNet's command line (argv[0] is the program name); *exit_code is 0 on success. */
NANOMX_API int NNIm2Rec(int argc, const char** argv, int* exit_code);

#ifdef __cplusplus
}
#endif

#endif /* NANOMX_C_API_IO_H_ */
