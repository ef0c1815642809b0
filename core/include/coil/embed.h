/* embed.h — coil as a library: compile a graph held in memory for a backend, or load an artifact
 * directory, and run it on tensors the caller owns, where they are (host or GPU memory), with no
 * copy. This is what the Python package (tools/python) and any C or C++ program that embeds coil
 * use; the command line tool is built on the same core. docs/embedding.md is the guide.
 *
 *   coil_session *s;   coil_model *m;   coil_binding *b;   coil_diag d;
 *   coil_session_new(NULL, &s, &d);                        // coil.ini, COIL_* as `coil` reads
 *   coil_model_compile(s, "mlp.coil", text, len, &m, &d);  // [coil] backend, mode, cache_dir
 *   coil_model_bind(m, 1, &x, &b, &d);                     // x: a DLPack tensor; sizes bound
 *   coil_binding_output(b, 0, &y);                         // y's dtype, sizes, strides: allocate
 *   coil_binding_run(b, ptrs, NULL, &d);                   // ptrs: x.data, y.data
 *
 * Rules:
 *  - Errors are values. Every fallible function returns 0 on success or a negative code: the
 *    negated coil_error_code of coil/coil_plugin.h (-COIL_ERR_UNSUPPORTED: an op, dtype or
 *    device the backend does not do; -COIL_ERR_INVALID_ARGUMENT: bad input, ...), with a
 *    message naming what was wrong and what was expected in *d (d may be NULL). Nothing here
 *    exits the process; out of memory while parsing or compiling is an error too (elsewhere it
 *    aborts, as everywhere in coil).
 *  - Tensors are described by coil_dltensor, laid out exactly as DLPack's DLTensor (dlpack.h
 *    0.6 and later), so a DLTensor* converts with a cast. Sizes and strides count elements;
 *    strides NULL means dense row-major. The caller owns every tensor and its memory.
 *  - Threads. A session may compile from several threads at once. A model may be bound and run
 *    from several threads: runs of one model are serialized inside it (a plugin runs one
 *    artifact at a time), runs of different models go in parallel. A binding is immutable.
 *  - Streams. A run on a GPU backend given a stream (coil_run_options.stream) is queued on that
 *    stream and returns without synchronizing: the outputs are ready when the stream reaches
 *    that point, as for any kernel the caller launches there. Without one the run is
 *    synchronous. A CPU backend always runs synchronously and accepts a stream as a no-op.
 */
#ifndef COIL_EMBED_H
#define COIL_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "coil/base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define COIL_EMBED_API_VERSION 1 /* bumped when a function's meaning changes */

/* COIL_EMBED_API_VERSION as the library was built (a binding loaded with dlopen or ctypes checks
 * it against the one it was written for). */
int coil_embed_api_version(void);

/* ---- tensors: DLPack's DLTensor, field for field ---- */

typedef struct coil_dldevice {
  int32_t device_type; /* DLDeviceType: 1 CPU, 2 CUDA, 3 CUDA host (pinned), 10 ROCm */
  int32_t device_id;
} coil_dldevice;

typedef struct coil_dldtype {
  uint8_t code;        /* DLDataTypeCode: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool */
  uint8_t bits;
  uint16_t lanes;      /* 1 */
} coil_dldtype;

typedef struct coil_dltensor {
  void *data;          /* with byte_offset added: the first element; may be NULL if empty */
  coil_dldevice device;
  int32_t ndim;
  coil_dldtype dtype;
  int64_t *shape;      /* ndim sizes */
  int64_t *strides;    /* ndim strides in elements, or NULL: dense row-major */
  uint64_t byte_offset;
} coil_dltensor;

/* coil's dtype as DLPack's and back: -1 when DLPack's has no coil dtype. */
coil_dldtype coil_dtype_to_dl(coil_dtype t);
int coil_dtype_from_dl(coil_dldtype t);

/* ---- sessions: a configuration and where plugins are found ---- */

typedef struct coil_session coil_session;

typedef struct coil_session_options {
  size_t struct_size;          /* sizeof(coil_session_options) */
  const char *config_file;     /* an ini file (docs/config.md); NULL: as the tool finds one
                                  ($COIL_CONFIG, else ./coil.ini if there); "": none */
  int use_env;                 /* nonzero: apply COIL_* environment variables (the tool does) */
  size_t noptions;             /* settings applied last, over the file and the environment: */
  const char *const *keys;     /*   [coil] keys ("backend", "mode", "cache_dir", ...) or */
  const char *const *values;   /*   "plugin.NAME.KEY" for an option of [plugin.NAME] */
} coil_session_options;

/* o may be NULL: config file and environment as the command line tool reads them. */
int coil_session_new(const coil_session_options *o, coil_session **out, coil_diag *d);
void coil_session_free(coil_session *s); /* after every model of it is freed; NULL: no-op */
/* The effective [coil] value of key (NULL for a key coil does not know); valid until free. */
const char *coil_session_get(const coil_session *s, const char *key);
/* Whether the core can lower an ATen op (an overload as in graphs: "aten.add.Tensor"). */
int coil_op_known(const char *op);

/* ---- models: a compiled graph, loaded by its backend and ready to run ---- */

typedef struct coil_model coil_model;

/* Parses the .coil text (file names it in messages), compiles it for the session's backend
 * (through the compile cache when [coil] cache_dir is set) and loads it. "ref" is not a
 * backend here: only plugins that execute can be embedded. */
int coil_model_compile(coil_session *s, const char *file, const char *text, size_t len,
                       coil_model **out, coil_diag *d);
/* The same graph written as an artifact directory (dir: missing, empty, or an artifact, which
 * is replaced), to be loaded later by coil_model_load or run by `coil run DIR`, without
 * Python. weights: a safetensors file whose tensors named like param inputs are embedded
 * (NULL: none); a model loaded from it then takes only the other inputs. */
int coil_artifact_compile(coil_session *s, const char *file, const char *text, size_t len,
                          const char *weights, const char *dir, coil_diag *d);
/* Loads an artifact directory (checked as `coil run` checks it) with the plugin that compiled
 * it, found on the session's plugin path. */
int coil_model_load(coil_session *s, const char *dir, coil_model **out, coil_diag *d);
void coil_model_free(coil_model *m); /* NULL: no-op */

/* The inputs a caller passes, in order: the graph's inputs, less the params embedded in a loaded
 * artifact. And the outputs. */
int coil_model_ninputs(const coil_model *m);
int coil_model_noutputs(const coil_model *m);
/* Input i's name in the graph ("x", "weight"), its dtype and rank; NULL/-1 out of range. */
const char *coil_model_input_name(const coil_model *m, int i);
int coil_model_input_dtype(const coil_model *m, int i);
int coil_model_input_rank(const coil_model *m, int i);
/* The backend that runs it ("cpu", "cuda"), and the device type its tensors may live on
 * besides the host (COIL_DEVICE_CUDA for cuda, COIL_DEVICE_CPU for host-only backends). */
const char *coil_model_backend(const coil_model *m);
int coil_model_device_type(const coil_model *m);

/* ---- bindings: the sizes of one call ---- */

typedef struct coil_binding coil_binding;

/* Checks inputs (coil_model_ninputs of them) against the program (dtype, rank, sizes under the
 * size symbols they bind, strides as the program reads them, device) and computes every output's
 * sizes. The data pointers are not kept: run takes them. */
int coil_model_bind(coil_model *m, int ninputs, const coil_dltensor *inputs, coil_binding **out,
                    coil_diag *d);
void coil_binding_free(coil_binding *b); /* NULL: no-op */
/* Output i's dtype, ndim, shape and strides (dense row-major) into *t: shape and strides point
 * into the binding; data NULL, device the inputs'. -1 when i is out of range. */
int coil_binding_output(const coil_binding *b, int i, coil_dltensor *t);
/* The value a size symbol of the graph took ("s0", "batch"); -1 when it has none. */
int64_t coil_binding_symbol(const coil_binding *b, const char *name);

typedef struct coil_run_options {
  size_t struct_size;          /* sizeof(coil_run_options) */
  int has_stream;              /* nonzero: stream is the caller's, even when it is 0 (CUDA's
                                  legacy default stream) */
  void *stream;                /* CUstream / hipStream_t */
} coil_run_options;

/* Runs the binding's program with data[0..ninputs) the inputs' data (each at the sizes and
 * strides bound) and data[ninputs..ninputs+noutputs) the outputs' (allocated by the caller at
 * coil_binding_output's sizes, on the inputs' device; written in place, every element). ro may
 * be NULL (no stream: synchronous). */
int coil_binding_run(const coil_binding *b, void *const *data, const coil_run_options *ro,
                     coil_diag *d);

/* bind + run + free: outputs described by the caller (checked against what bind computes). */
int coil_model_run(coil_model *m, int ninputs, const coil_dltensor *inputs, int noutputs,
                   const coil_dltensor *outputs, const coil_run_options *ro, coil_diag *d);

#ifdef __cplusplus
}
#endif

#endif
