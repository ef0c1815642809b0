/* coil.h — the public API of the coil core.
 *
 * coil reads a tensor graph (.coil text, docs/graph-format.md), checks it, and runs it on the
 * reference interpreter ("ref", f64 op by op) or, in later stages, compiles it for a backend.
 * Every fallible function returns 0 on success and -1 on error, with the reason written into a
 * coil_diag the caller owns. Nothing here exits or aborts the process, except on out-of-memory. */
#ifndef COIL_H
#define COIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coil/base.h"
#include "coil/wir.h"

#define COIL_VERSION_STRING "0.1.0"

/* ---- host tensors: dense, contiguous, row-major, owned by whoever holds them ---- */
typedef struct coil_tensor {
  coil_dtype dtype;
  int rank;
  int64_t shape[COIL_MAX_RANK];
  void *data;    /* malloc'd, numel*dtype size bytes (at least 1 byte); freed by coil_tensor_free */
} coil_tensor;

int coil_tensor_init(coil_tensor *t, coil_dtype dt, int rank, const int64_t *shape, coil_diag *d);
void coil_tensor_free(coil_tensor *t);
int64_t coil_tensor_numel(const coil_tensor *t);
size_t coil_tensor_nbytes(const coil_tensor *t);
double coil_tensor_get_f64(const coil_tensor *t, int64_t i);   /* element i as f64 */
int64_t coil_tensor_get_i64(const coil_tensor *t, int64_t i);  /* element i as i64 (ints, bool) */
void coil_tensor_set_f64(coil_tensor *t, int64_t i, double v); /* rounds/casts as torch does */
void coil_tensor_set_i64(coil_tensor *t, int64_t i, int64_t v);

/* Comparison with a tolerance, NaN equal to NaN and infinities equal to themselves:
 * |got - want| <= atol + rtol*|want| per element; integers and bools compare exactly when
 * rtol = atol = 0. The default tolerances per dtype are those of torch.testing.assert_close. */
typedef struct coil_compare {
  bool same_shape;        /* dtype, rank and sizes agree (nothing else is checked otherwise) */
  int64_t mismatches;     /* elements outside the tolerance */
  int64_t worst;          /* index of the largest error, -1 if none */
  double worst_got, worst_want;
} coil_compare;

void coil_tolerance_default(coil_dtype t, double *rtol, double *atol);
bool coil_tensor_allclose(const coil_tensor *got, const coil_tensor *want, double rtol,
                          double atol, coil_compare *out);

/* A list of named tensors: the contents of a safetensors file, a set of inputs or outputs. */
typedef struct coil_tensor_list {
  int n, cap;
  char **names;          /* owned */
  coil_tensor *tensors;  /* owned */
} coil_tensor_list;

void coil_tensor_list_free(coil_tensor_list *l);
/* Takes ownership of *t (its data moves into the list; *t is zeroed). */
void coil_tensor_list_add(coil_tensor_list *l, const char *name, coil_tensor *t);
coil_tensor *coil_tensor_list_find(const coil_tensor_list *l, const char *name);

/* ---- files the user names (outfile.c) ---- */
/* Writes everything to fd: 0, or -1 with errno set. */
typedef int (*coil_write_fn)(int fd, void *ctx);
/* Writes path through fn: a regular file (or none) through a temporary file, synced and renamed
 * over it, so a failed write leaves no partial file; a symbolic link's target the same way; a
 * character device or FIFO in place, every error reported; anything else refused. */
int coil_write_file(const char *path, coil_write_fn fn, void *ctx, coil_diag *d);
int coil_write_text_file(const char *path, const char *text, coil_diag *d);
/* write(2) until all n bytes are written: 0, or -1 with errno set. */
int coil_write_all(int fd, const void *buf, size_t n);

/* ---- safetensors (https://github.com/huggingface/safetensors format) ---- */
int coil_safetensors_read(const char *path, coil_tensor_list *out, coil_diag *d);
int coil_safetensors_read_mem(const char *what, const uint8_t *buf, size_t n,
                              coil_tensor_list *out, coil_diag *d);
/* Writes through coil_write_file: a failed write never leaves a partial file. */
int coil_safetensors_write(const char *path, const coil_tensor_list *l, coil_diag *d);

/* ---- graphs ---- */
typedef struct coil_graph coil_graph;

/* Parse and type-check a .coil graph. `file` names the source in messages. */
coil_graph *coil_graph_parse(const char *file, const char *text, size_t len, coil_diag *d);
coil_graph *coil_graph_load(const char *path, coil_diag *d);
void coil_graph_free(coil_graph *g);
/* Print the normalised graph (every statement typed); the text parses back to the same graph.
 * Returns a malloc'd string. */
char *coil_graph_print(const coil_graph *g);

/* Reference interpreter: run g on inputs (by graph input name; params and buffers too), writing
 * the outputs as out0, out1, ... into *outputs. Symbolic sizes bind from the inputs. */
int coil_ref_run(const coil_graph *g, const coil_tensor_list *inputs, coil_tensor_list *outputs,
                 coil_diag *d);

/* ---- compiling ---- */

/* A library op the core can also generate a kernel for (aten.convolution.default), claimed by
 * the target plugin for some dtypes: its supports() says yes to the op on each of them. */
typedef struct coil_library_claim {
  const char *op;            /* the ATen overload, e.g. "aten.convolution.default" */
  uint32_t dtypes;           /* bit (1u << dtype) for each result dtype claimed */
} coil_library_claim;

typedef struct coil_compile_options {
  bool fuse;                 /* fuse nodes into kernels (default true) */
  bool verify;               /* run the Wrapper IR verifier (default true) */
  const char *dump_dir;      /* if set: write graph.txt, ir_pre_fusion.txt, ir_post_fusion.txt,
                                program.wir there */
  /* Ops the core can either call as a library op or generate itself become extern_call lines
   * where listed here for their result dtype, generated kernels everywhere else (none listed,
   * the default: every one generated). The runtime fills the list from the plugin's supports()
   * and [coil] convolution (coil_backend_compile_options in core/backend.h). */
  int nlibrary;
  const coil_library_claim *library; /* nlibrary claims, owned by the caller */
  /* Partial offload (core/partition.h): placement[n], for n < nplacement, is where lowered node
   * n runs; nodes of different placement never share a kernel. work_line, when set, is told
   * for each kernel_call and extern_call line the lowered node it comes from (the first of its
   * kernel's nodes), so a first compile without fusion can map lines to nodes. */
  const int *placement;
  int nplacement;
  void (*work_line)(void *user, int line, int node);
  void *work_user;
  /* The plugin the program is for and its instance (the runtime's coil_loaded_plugin and
   * coil_plugin), set by coil_backend_compile_options: where the plugin has the statement query
   * (ABI 1.4 supports_stmt) and refuses a coil.attention call of the program, by its shapes or
   * layouts, the graph is compiled again with attention as written. NULL: not asked ([coil]
   * attention = library or generated). */
  const struct coil_loaded_plugin *plugin;
  const struct coil_plugin *instance;
  /* Decompose-K ([coil] decompose_k, coil_backend_decompose_k): an mm or addmm becomes a
   * batched product of N slices of K into f32 partials (aten.bmm.dtype, where the plugin claims
   * it) and a generated sum over the slices that takes the epilogue (bias, activation, the cast
   * back). N > 1: N slices wherever N divides K; 0 (auto) and -1 (off): one product (auto may
   * get a rule where a measurement supports one: docs/config.md). */
  int decompose_k;
  /* [coil] matmul: false (the default), every mm, bmm and addmm product is an extern_call of
   * aten.mm.default / aten.bmm.default; true, only where `library` claims that op for the
   * result's dtype, and the core's own loop nest (a sum over K, a reduction kernel) elsewhere,
   * so a plugin without a GEMM still runs them. */
  bool matmul_generated;
} coil_compile_options;

/* Lowers, schedules and emits g as a Wrapper IR program (owned by the caller: coil_wir_free).
 * o may be NULL for the defaults. */
coil_wir_program *coil_compile_graph(const coil_graph *g, const coil_compile_options *o,
                                     coil_diag *d);

#endif
