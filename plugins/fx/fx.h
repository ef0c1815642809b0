/* fx.h — the fx plugin's parts: the Triton emitter (fx_triton.c) writes kernels.py, one
 * @triton.jit function per Wrapper IR kernel; the graph writer (fx_graph.c) writes graph.py,
 * which builds the program as a torch.fx.GraphModule whose nodes allocate, call ATen for the
 * extern calls and launch those kernels. fx_plugin.c is the ABI around them. */
#ifndef COIL_FX_H
#define COIL_FX_H

#include <stdbool.h>

#include "coil/coil_plugin.h"
#include "coil/strbuf.h"
#include "coil/wir.h"

#define FX_NAME "fx"
#define FX_VERSION "0.1.0"

/* A Wrapper IR name is put in Python as it is (kernel, param, buffer names: [A-Za-z_][A-Za-z0-9_]*
 * by the parser and verifier); one that Python reads otherwise (a keyword, a name of the
 * generated modules' own) is refused with a message naming it, never renamed. */
bool fx_name_ok(const char *name);

/* The Triton dtype of t (tl.float32, ..., tl.int1 for bool) and the one its values are
 * computed in (f16 and bf16 in tl.float32). */
const char *fx_tl_dtype(coil_dtype t);
const char *fx_tl_compute(coil_dtype t);

/* An index or size expression as Triton and Python read it: `a // b` and `a % b` where both
 * sides are known non-negative (Triton's integer division truncates), coil_floordiv(a, b) /
 * coil_mod(a, b) otherwise, coil_min / coil_max nested two at a time; variables as named by
 * var_name (NULL: the context's names). */
void fx_sym_print(const coil_wir_program *p, const coil_sym *e, const char *(*var_name)(const coil_wir_program *, int),
                  coil_strbuf *out);

/* Why kernel k cannot be written in Triton (a combining store of a mode or dtype Triton's atomics
 * lack, a pow of integers), into why; false if it can. */
bool fx_kernel_unsupported(const coil_wir_program *p, const coil_kernel *k, char *why, size_t n);

/* kernels.py: the helpers, each kernel, and KERNELS, a table of every kernel's function, its
 * argument types (Triton signature strings) and the constexpr arguments a launch gives. */
void fx_triton_module(const coil_wir_program *p, coil_strbuf *out);

/* The launch of kernel k that graph.py writes: the block sizes it picks from the numbers of x
 * and r points (see fx_triton.c). */
void fx_launch_source(const coil_wir_program *p, const coil_kernel *k, coil_strbuf *out);

/* graph.py: build() -> torch.fx.GraphModule; why set and false when a line cannot be written
 * (an extern op with no ATen overload of that name). */
bool fx_graph_module(const coil_wir_program *p, coil_strbuf *out, char *why, size_t n);

/* NULL when every name of p can go into Python as it is and every kernel into Triton; else an
 * error naming what cannot (fx_plugin.c). */
coil_error *fx_check_program(const coil_wir_program *p);
/* kernels.py, graph.py, program.wir, then manifest.json (which marks the directory complete) into
 * dir, each written whole or not at all. */
coil_error *fx_write(const coil_wir_program *p, const char *dir);

#endif
