/* webxnn C API: load a .xnn blob, describe its inputs and outputs, run it.
 *
 * Plain C, so an app on a phone or a board can embed the runtime without Python. No C++ exception crosses
 * this boundary: every call returns a status, and wx_last_error() gives the message of the last failure on
 * the calling thread. A program may be run from several threads at once; each wx_run uses its own memory.
 */
#ifndef WEBXNN_RUNTIME_H_
#define WEBXNN_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define WX_API __declspec(dllexport)
#else
#define WX_API __attribute__((visibility("default")))
#endif

#define WX_MAX_RANK 8

typedef enum wx_status {
  WX_OK = 0,
  WX_ERROR_FORMAT = 1,           /* the blob is malformed, truncated or hostile */
  WX_ERROR_INPUT = 2,            /* wrong inputs to wx_run: count, dtype, shape, buffer size */
  WX_ERROR_UNSUPPORTED = 3,      /* valid blob, but a node or datatype this runtime cannot run */
  WX_ERROR_IO = 4,               /* file could not be opened or mapped */
  WX_ERROR_INVALID_ARGUMENT = 5, /* null pointer, index out of range */
  WX_ERROR_INTERNAL = 6          /* a bug: please report */
} wx_status;

/* Element types, WebNN's names. */
typedef enum wx_dtype {
  WX_FLOAT32 = 1,
  WX_FLOAT16 = 2,
  WX_INT8 = 3,
  WX_UINT8 = 4,
  WX_INT32 = 5,
  WX_UINT32 = 6,
  WX_INT64 = 7,
  WX_UINT64 = 8
} wx_dtype;

typedef struct wx_program wx_program;

/* wx_options.flags bits. */
#define WX_OPTION_SPIN_US 1 /* spin_us is set; otherwise WEBXNN_SPIN_US from the environment, else 100 */
/* Run on the process's shared pool (sized by wx_set_threads); `threads` is ignored, and WX_OPTION_SPIN_US with
 * it is WX_ERROR_INVALID_ARGUMENT (spin_us applies to a program's own pool). */
#define WX_OPTION_SHARED_POOL 2

/* Zero-initialised options are the defaults. */
typedef struct wx_options {
  uint32_t threads; /* 0 = one per physical core */
  uint32_t flags; /* WX_OPTION_* bits */
  uint32_t spin_us; /* with WX_OPTION_SPIN_US: how long idle threads poll before sleeping, <= 1000000 us */
} wx_options;

/* A tensor's description. For inputs, a dim of a dynamic input is its maximum and `dynamic[i]` is 1. */
typedef struct wx_tensor_info {
  const char* name;
  wx_dtype dtype;
  uint32_t rank;
  int64_t dims[WX_MAX_RANK];
  uint8_t dynamic[WX_MAX_RANK];
} wx_tensor_info;

/* A tensor passed to or from wx_run: dense, row-major. For outputs, `data` is a caller buffer of
 * `capacity_bytes`; wx_run fills `rank` and `dims` with the actual shape. */
typedef struct wx_tensor {
  void* data;
  size_t capacity_bytes;
  wx_dtype dtype;
  uint32_t rank;
  int64_t dims[WX_MAX_RANK];
} wx_tensor;

WX_API const char* wx_version(void);

/* Load from a file (memory-mapped; constants are not copied) or from bytes (copied, so the caller may free
 * them). The blob is verified completely before anything else touches it. An ExecuTorch program (.pte) that
 * is one XnnpackBackend delegate call loads as its payload, constants in the program's named data included. */
WX_API wx_status wx_load_file(const char* path, const wx_options* options, wx_program** out);
WX_API wx_status wx_load_bytes(const void* data, size_t size, const wx_options* options, wx_program** out);
WX_API void wx_free(wx_program* program);

/* Replaces the process's shared pool (WX_OPTION_SHARED_POOL) by one of `threads` threads (0 = one per core)
 * polling `spin_us` (< 0: the default). Programs loaded before keep the pool they were loaded with. */
WX_API wx_status wx_set_threads(uint32_t threads, int64_t spin_us);

WX_API size_t wx_num_inputs(const wx_program* program);
WX_API size_t wx_num_outputs(const wx_program* program);
WX_API wx_status wx_input_info(const wx_program* program, size_t index, wx_tensor_info* out);
WX_API wx_status wx_output_info(const wx_program* program, size_t index, wx_tensor_info* out);

/* Run once. inputs[i] matches input i; outputs[i] receives output i. */
WX_API wx_status wx_run(wx_program* program, const wx_tensor* inputs, size_t num_inputs, wx_tensor* outputs,
                        size_t num_outputs);

/* The message of the last failed call on this thread ("" if none). Valid until the next call. */
WX_API const char* wx_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* WEBXNN_RUNTIME_H_ */
