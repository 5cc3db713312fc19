/* What libnanomx.so exports. The library is built with hidden visibility: only the C API
 * (functions marked NANOMX_API) and the C++ API declared in include/nanomx/ (each public header
 * wraps its declarations in `#pragma GCC visibility push(default)` ... `pop`) leave it; the
 * layers' internal headers under src/ stay private to the library. */
#ifndef NANOMX_EXPORT_H_
#define NANOMX_EXPORT_H_

#define NANOMX_API __attribute__((visibility("default")))

#endif /* NANOMX_EXPORT_H_ */
