/* infer.h — internals of type inference shared by infer.c (binding, the helpers, the core rules
 * and the table of rules) and the rule families in infer_backward.c (backward ops, sort,
 * pairwise distances), infer_shapes.c (shapes, padding, resampling, normalisation and pooling)
 * and infer_scatter.c (scatters). A rule checks the arguments bound to the current statement's
 * schema, reports the first one at fault with ierr, and sets the statement's output type. */
#ifndef COIL_INFER_H
#define COIL_INFER_H

#include "graph.h"
#include "ops.h"

typedef struct {
  coil_graph *g;
  coil_node *n;              /* the statement whose type is inferred */
  coil_diag *d;
  coil_schema s;             /* its op's schema, parsed */
  coil_symctx *sc;           /* the graph's sym context: sizes are its expressions */
} ictx;

/* Reports an error at literal `at` (the statement if NULL or without a position); returns -1. */
int ierr(ictx *c, const coil_lit *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- accessors ---- */

static inline coil_lit *
P(ictx *c, const char *name)
{
  int i = coil_schema_find(&c->s, name);
  return i >= 0 ? &c->n->bound[i] : NULL;
}

static inline const coil_type *
tensor_of(const coil_lit *l)
{
  return l && l->kind == COIL_LIT_VALUE ? &l->v->type : NULL;
}

static inline bool
is_scalar_lit(const coil_lit *l)
{
  return l->kind == COIL_LIT_INT || l->kind == COIL_LIT_FLOAT || l->kind == COIL_LIT_BOOL;
}

static inline const coil_sym *
K(ictx *c, int64_t v)
{
  return coil_sym_const(c->sc, v);
}

static inline bool
sym_eq(const coil_sym *a, const coil_sym *b)
{
  return coil_sym_cmp(a, b) == 0;
}

static inline bool
sym_is(const coil_sym *a, int64_t v)
{
  int64_t x;
  return coil_sym_is_const(a, &x) && x == v;
}

static inline const char *
S(ictx *c, const coil_sym *s)
{
  return coil_sym_str(c->sc, s, COIL_SYM_PY_SYNTAX);
}

/* ---- helpers (infer.c) ---- */

/* The output type: one tensor, or a tuple of n tensors whose elements the caller fills. */
void set_tensor(ictx *c, coil_dtype dt, int rank, const coil_sym *const *dims);
coil_type *set_tuple(ictx *c, int n);
int wrap_dim(ictx *c, const coil_lit *at, int64_t dim, int rank, int *out);
/* Broadcasts dims[0..*rank) with t's sizes in place (t NULL: unchanged). */
int broadcast(ictx *c, int *rank, const coil_sym **dims, const coil_type *t);
int int_list(ictx *c, const coil_lit *l, int64_t *out, int *n, int cap);
bool has_dims(const coil_type *t, int rank, const coil_sym *const *dims);
const char *dims_str(ictx *c, int rank, const coil_sym *const *dims); /* "[a, b]", in the arena */
/* Optional argument `name`: None or a 1-D tensor of size len. */
int check_vec(ictx *c, const char *name, const coil_sym *len);
const coil_sym *numel(ictx *c, const coil_type *t);
int window_out(ictx *c, const coil_sym *in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode,
               const coil_sym **out);
int conv_dims(ictx *c, const coil_sym **dims, int64_t *cout_out);
int pool_dims(ictx *c, const coil_type *x, int nsp, const coil_sym **dims);

/* ---- rules: each checks the current statement and sets its output type; 0 or -1 ---- */

/* infer.c, also run by the scatters for the shape they write */
int r_slice(ictx *c);
int r_select(ictx *c);
int r_index(ictx *c);

/* infer_backward.c */
int r_pool_bwd(ictx *c);
int r_norm_bwd(ictx *c);
int r_conv_bwd(ictx *c);
int r_col2im(ictx *c);
int r_grid_sample(ictx *c);
int r_embedding_bag(ictx *c);
int r_sort(ictx *c);
int r_cdist(ictx *c);

/* infer_shapes.c */
int r_flip(ictx *c);
int r_repeat(ictx *c);
int r_index_select(ictx *c);
int r_diagonal(ictx *c);
int r_as_strided(ictx *c);
int r_empty(ictx *c);
int r_mode_pad(ictx *c);
int r_upsample(ictx *c);
int r_group_norm(ictx *c);
int r_batch_norm_stats(ictx *c);
int r_dropout(ictx *c);
int r_adaptive_pool(ictx *c);
int r_sym_size(ictx *c);

/* infer_scatter.c */
int r_scatter(ictx *c);
int r_index_put(ictx *c);
int r_embedding_bwd(ictx *c);
int r_view_scatter(ictx *c);
int r_masked_scatter(ictx *c);

#endif
