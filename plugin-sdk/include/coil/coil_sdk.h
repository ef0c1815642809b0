/* coil_sdk.h — helpers for plugin authors (the coil-sdk library): what every C-family code
 * generator needs from a Wrapper IR program, so a vendor's emitter only writes what differs in
 * its dialect. The CPU plugin (C + OpenMP) is its first user; CUDA and HIP share it.
 *
 *   - C types and literals for dtypes (storage and compute types, exact hex-float constants);
 *   - index expressions in C syntax (coil_sym_print with the kernel's loop ranges set);
 *   - the right-hand side of every kernel instruction, given its operands' C names, with the
 *     dialect choosing the spelling of math functions (expf, __expf, coil_expf, ...);
 *   - which instructions of a kernel vary over the reduction (r) loops;
 *   - a prelude of small C helpers (floor division, NaN-propagating min/max, casts with
 *     PyTorch's semantics, f16/bf16 conversions) that generated code can include;
 *   - the ABI's error objects (a plugin points error_code/error_message/error_free here) and
 *     artifact files written atomically and read back.
 * Everything takes the program read-only; nothing here keeps state. */
#ifndef COIL_SDK_H
#define COIL_SDK_H

#include <stdbool.h>

#include "coil/coil_plugin.h"
#include "coil/strbuf.h"
#include "coil/wir.h"

/* A C-family dialect: the parts that differ between C, CUDA and HIP. */
typedef struct coil_c_dialect {
  /* Spelling of the math function for a unary op on floating dtype t (F32 or F64), e.g. "expf".
   * NULL: the SDK's default (libm names). */
  const char *(*math_fn)(coil_kop op, coil_dtype t);
} coil_c_dialect;

/* The C type a value of dtype t is held in while computing: float for f32/f16/bf16, double
 * for f64, bool for bool, the exact integer type otherwise. */
const char *coil_c_compute_type(coil_dtype t);
/* The C type of t in memory: uint16_t for f16/bf16, uint8_t for bool. */
const char *coil_c_storage_type(coil_dtype t);
/* A literal of dtype t (exact: hex floats; INFINITY, NAN with sign). */
void coil_c_literal(coil_strbuf *b, coil_dtype t, double f, int64_t i);
/* Sets the ranges of kernel k's loop variables in p's symbol context (each kernel has its own
 * extents; call before printing its indices). */
void coil_c_set_loop_ranges(const coil_wir_program *p, const coil_kernel *k);
/* An index expression in C syntax (int64_t arithmetic). */
void coil_c_index(const coil_wir_program *p, const coil_sym *e, coil_strbuf *b);
/* The expression computing instruction `in` (not LOAD, STORE or REDUCE) from operand names. */
void coil_c_inst_expr(const coil_c_dialect *dl, const coil_kinst *in, const coil_kinst *insts,
                      const char *const *args, coil_strbuf *b);
/* The value of instruction i of kernel k (any op but STORE and REDUCE: a load from its param, an
 * index expression, or coil_c_inst_expr), its operands named by names[operand]. */
void coil_c_value(const coil_c_dialect *dl, const coil_wir_program *p, const coil_kernel *k, int i,
                  const char *const *names, coil_strbuf *b);
/* The expression for reading element `index` of a param of dtype t named `ptr` (converting
 * f16/bf16 to float), and the statement storing value `v` there. */
void coil_c_load(coil_strbuf *b, coil_dtype t, const char *ptr, const char *index);
void coil_c_store(coil_strbuf *b, coil_dtype t, const char *ptr, const char *index, const char *v);
/* The statement of STORE instruction i of kernel k (no newline), its value named by names[]. */
void coil_c_store_inst(const coil_wir_program *p, const coil_kernel *k, int i, const char *const *names,
                       coil_strbuf *b);
/* Combining stores (Wrapper IR 1.3): coil_c_store_inst writes a store of mode add/mul/max/min as
 * a call `coil_store_MODE_DTYPE(ptr + (index), value)`; coil_c_combining_stores writes those
 * functions (after coil_c_prelude, whose conversions and NaN-propagating fmax/fmin they use), atomic
 * for code whose points run in parallel: compare-and-swap loops with the GCC/Clang __atomic
 * builtins for C, CUDA's atomicAdd/atomicMax/atomicMin where one exists (f32, f64 add; i32, i64
 * add, max, min) and atomicCAS loops otherwise (a byte through its aligned 32-bit word). The
 * combined value is rounded to the element's dtype once per store, as PyTorch's scatter_add is. */
bool coil_kernel_has_combining_store(const coil_kernel *k);
void coil_c_combining_stores(coil_strbuf *b, bool cuda);
/* Indirect indexing (Wrapper IR 1.2). The indirect instructions whose variables iN instruction
 * i's index uses (a load, store or index reads them as it reads its operands), into deps[]
 * (at most max); returns how many. */
int coil_kinst_indirect_deps(const coil_wir_program *p, const coil_kernel *k, int i, int *deps, int max);
/* Whether kernel k has an indirect instruction (its C function then takes `int64_t *coil_oob`
 * last, the cpu and cuda convention: the value of an index found out of range, else untouched). */
bool coil_kernel_has_indirect(const coil_kernel *k);
/* The statements of INDIRECT instruction i: `const int64_t vI = operand;` and `const int64_t iI`,
 * the value when it lies in [0, bound), else 0 after `store_oob` (a statement with `%s` for the
 * bad value, e.g. "*coil_oob = %s;") has recorded it. Each line starts with `pad`. */
void coil_c_indirect_inst(const coil_wir_program *p, const coil_kernel *k, int i, const char *const *names,
                          const char *store_oob, const char *pad, coil_strbuf *b);
/* Scans (Wrapper IR 1.4). Whether kernel k has one; the identity of scan kind red on dtype t
 * (0, 1, or the dtype's lowest/highest value, -INFINITY for floats); acc combined with v as a C
 * expression of t's compute type: integers wrap, max and min propagate NaN (coil_fmaxf, ...). A
 * scan's dtype is f32, f64 or an integer (the verifier's rule). */
bool coil_kernel_has_scan(const coil_kernel *k);
void coil_c_scan_identity(coil_dtype t, coil_reduction red, coil_strbuf *b);
void coil_c_scan_combine(coil_dtype t, coil_reduction red, const char *acc, const char *v, coil_strbuf *b);
/* per_r[i] = instruction i of k varies over the r loops (its value is one per r point; a scan's
 * always does). */
void coil_c_per_r(const coil_wir_program *p, const coil_kernel *k, bool *per_r);
/* C source of the helpers generated code uses (coil_floordiv, coil_mod, coil_min, coil_max for
 * indices; coil_f2i64, coil_fmax/fmin NaN-propagating, f16/bf16 conversions, ...). Static. */
const char *coil_c_prelude(void);

/* ---- around the ABI ---- */
/* A new error object (message formatted like printf; at most 4 KiB). Never NULL: when memory
 * runs out it is a static out-of-memory error, which coil_sdk_error_free leaves alone. */
coil_error *coil_sdk_error(coil_error_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
coil_error *coil_sdk_out_of_memory(void);
coil_error_code coil_sdk_error_code(const coil_error *err);
const char *coil_sdk_error_message(const coil_error *err);
void coil_sdk_error_free(coil_error *err);
/* Writes DIR/NAME through a temporary name and a rename (no half-written file). */
coil_error *coil_sdk_write_file(const char *dir, const char *name, const char *text);
/* Reads the whole of path, NUL-terminated (malloc'd; free it); NULL if it cannot be read, memory
 * runs out, or it holds more than max bytes (errno EFBIG). Allocates as it reads. */
char *coil_sdk_read_file(const char *path, size_t max, size_t *len);
/* An artifact's DIR/program.wir (at most 256 MiB), parsed and verified; errors name the plugin
 * (prefix, e.g. "cuda") and the file. */
coil_error *coil_sdk_read_program(const char *prefix, const char *dir, coil_wir_program **out);
/* The program a compile was handed, as the plugin's own copy (free it with coil_wir_free):
 * args->program_text (ABI 1.3) parsed and verified by the SDK's Wrapper IR library, so the
 * plugin depends on the text format, not on the host's structs, and may change its copy (loop
 * ranges, ...). From a host older than 1.3, which passes no text, the copy is made from
 * args->program. Errors name the plugin (prefix). */
coil_error *coil_sdk_compile_program(const char *prefix, const coil_plugin_compile_args *args,
                                     coil_wir_program **out);
/* The text of that program: args->program_text, or (from a host older than 1.3) the print of
 * args->program, malloc'd in either case (free it). NULL when there is neither. */
char *coil_sdk_compile_text(const coil_plugin_compile_args *args);

#endif
