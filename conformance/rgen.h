/* rgen.h — the random tier's graph generator (NNSmith-style): small valid .coil graphs built by
 * construction from a seed. Every value's dtype, shape (sizes may be k*s0) and a bound on its
 * values are tracked, so an op is only chosen where its rules accept the operands it is given;
 * domains (log of positives, asin of (-1, 1), indices in range) are met by guard statements or
 * by inputs drawn from the right range. What the generator's model gets wrong the core's
 * checker refuses: the tier counts those graphs and does not run them.
 *
 * A graph is kept as statements whose operands name values by number (@N), so that the
 * shrinker can cut a statement (its results become fresh inputs of the same type and range)
 * and print what is left. */
#ifndef COIL_RGEN_H
#define COIL_RGEN_H

#include <stdbool.h>
#include <stdint.h>

#include "coil/coil.h"
#include "coil/strbuf.h"

#define RG_MAX_RANK 4
#define RG_MAX_OUTS 64

typedef struct rg_dim {
  int64_t c;       /* the size when m == 0 */
  int m;           /* > 0: the size is m*s0 */
} rg_dim;

typedef struct rg_val {
  coil_dtype dt;
  int rank;
  rg_dim d[RG_MAX_RANK];
  double lo, hi;   /* every element lies in [lo, hi] (floats: NaN never; +-inf: no bound) */
  bool exact;      /* the same bits on every backend (no rounding took part): ops that are not
                      continuous (floor, compare, argmax, to int) may take it */
  bool contig;     /* dense row-major: aten.view may take it */
  int stmt;        /* the statement defining it, -1 for a graph input */
  uint64_t seed;   /* an input: where its values come from */
  bool anchor;     /* an input of size s0 printed even when unused, so that s0 is bound by an
                      input that has it alone (sizes like 5*s0 do not bind it) */
} rg_val;

typedef struct rg_stmt {
  char *text;      /* the op call with operands as @N */
  int first, nres; /* results: values first .. first + nres - 1 (nres > 1: a tuple, getitem'd) */
  bool dead;
} rg_stmt;

typedef struct rg_graph {
  rg_val *v;
  int nv, capv;
  rg_stmt *s;
  int ns, caps;
  int outs[RG_MAX_OUTS];
  int nouts;
  bool sym;        /* some size is a multiple of s0 */
  int64_t s0[2];   /* s0 at the two runs */
  uint64_t rng;
} rg_graph;

/* Generates graph `seed` with about `nstmts` statements. */
void rg_generate(rg_graph *g, uint64_t seed, int nstmts);
void rg_free(rg_graph *g);
/* Adds h's values, statements and outputs to g (a batch: independent graphs in one program;
 * s0 as in the first symbolic one). */
void rg_append(rg_graph *g, const rg_graph *h);
/* The .coil text (inputs used, live statements, outputs); with_ranges adds a comment per
 * input saying which values it takes. */
void rg_print(const rg_graph *g, coil_strbuf *b, bool with_ranges);
/* Turns statement s's results into graph inputs of the same types and ranges, and drops the
 * statements nothing live uses any more. */
void rg_cut(rg_graph *g, int s);
void rg_drop_output(rg_graph *g, int k);
/* Every use of value `from` (operands, outputs) becomes `to`. */
void rg_replace(rg_graph *g, int from, int to);
bool rg_same_type(const rg_graph *g, int a, int b);
int rg_live_stmts(const rg_graph *g);
bool rg_stmt_live(const rg_graph *g, int s);
/* The values of input value i (dtype and shape of the value, s0 as given). */
int rg_input_fill(const rg_graph *g, int i, int64_t s0, coil_tensor *t, coil_diag *d);
/* "x3" / "v5": a value's name in the printed graph. */
void rg_name(const rg_graph *g, int i, char *out, size_t n);

#endif
