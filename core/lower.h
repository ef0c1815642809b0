/* lower.h — the loop IR between the graph and the Wrapper IR (core-internal).
 *
 * Lowering (lower.c, lower_ops.c) turns each graph value into a lazy tensor: an expression that
 * computes element d0..dn of the value from loads of realized buffers, the way Inductor's
 * TensorBox carries an inner_fn. Pointwise ops and views only build expressions, so they fuse
 * into whatever reads them; reductions, library ops and values that must exist in memory
 * (graph outputs, inputs of library ops, values read often whose expression is large) are
 * realized into buffers, each computed by one scheduler node. The scheduler (sched.c) groups
 * nodes into kernels and emit.c writes the Wrapper IR with a memory plan.
 *
 * All of it lives in one arena (the compile's) and in the program's sym context, so index
 * expressions are the ones the Wrapper IR will carry. */
#ifndef COIL_LOWER_H
#define COIL_LOWER_H

#include "coil/wir.h"
#include "graph.h"
#include "ops.h"

/* ---- expressions: one element of a lazy tensor ---- */

typedef enum {
  LX_LOAD,    /* buffer[index] */
  LX_CONST,
  LX_INDEX,   /* the value of an index expression (i64) */
  LX_OP,      /* a kernel op (unary, binary, compare, where, cast) over operand expressions */
  LX_INDIRECT,/* args[0], an integer, checked to lie in [0, bound): the value of variable `index`
                 (a fresh q<N>) in the loads that name this node among their args */
} lx_kind;

typedef struct lexpr lexpr;
struct lexpr {
  lx_kind kind;
  coil_kop op;               /* LX_OP */
  coil_dtype dtype;
  int buffer;                /* LX_LOAD: index into the lowering's buffers */
  const coil_sym *index;     /* LX_LOAD, LX_INDEX: over the tensor's dimension variables (and
                                the variables of the LX_INDIRECT args of a load); LX_INDIRECT:
                                its variable */
  const coil_sym *bound;     /* LX_INDIRECT */
  double f;                  /* LX_CONST, floating */
  int64_t i;                 /* LX_CONST, integer and bool */
  int nargs;
  const lexpr *args[3];      /* LX_OP: operands; LX_LOAD: the LX_INDIRECT values its index uses */
  int size;                  /* nodes in the tree (shared subtrees counted once per use) */
  const char *origin;        /* the ATen op whose lowering made it */
};

/* A lazy tensor: element (d0, ..., dn) is `expr` with the dimension variables dvars bound. */
typedef struct lazy {
  coil_dtype dtype;
  int rank;
  const coil_sym *sizes[COIL_MAX_RANK];
  const coil_sym *dvars[COIL_MAX_RANK]; /* fresh sym variables, one per dimension */
  const lexpr *expr;
  int realized;              /* buffer index when expr is exactly a contiguous load of it, or -1 */
} lazy;

/* ---- buffers and nodes ---- */

typedef enum { LB_INPUT, LB_COMPUTED } lbuf_kind;

typedef struct lbuf {
  lbuf_kind kind;
  coil_dtype dtype;
  int rank;
  const coil_sym *sizes[COIL_MAX_RANK];
  const coil_sym *strides[COIL_MAX_RANK];
  int input;                 /* LB_INPUT: graph input position */
  int node;                  /* LB_COMPUTED: the node that writes it */
  bool is_output;            /* returned by the graph */
  int users;                 /* nodes reading it (after dead-code elimination) */
  int wir;                   /* buffer index in the Wrapper IR program, once emitted */
  int value;                 /* the graph value a scatter's result buffer holds (lowering only:
                                a later scatter of that value may write it in place), else -1 */
} lbuf;

typedef enum {
  LN_POINTWISE, LN_REDUCTION, LN_EXTERN,
  LN_SCATTER,                /* stores through indirect indices into a buffer that starts as
                                another's contents and storage (lower_scatter.c) */
} lnode_kind;

typedef struct lnode {
  lnode_kind kind;
  int out;                   /* buffer written (EXTERN: the first output) */
  /* POINTWISE and REDUCTION: iteration space. A pointwise node iterates the output's dims; a
   * reduction iterates its input's dims (full), reducing those marked in red[] */
  int rank;
  const coil_sym *sizes[COIL_MAX_RANK];
  const coil_sym *dvars[COIL_MAX_RANK];
  bool red[COIL_MAX_RANK];
  coil_reduction reduction;
  bool scan;                 /* REDUCTION: an inclusive scan along the red[] dim (lz_scan): the
                                output has every dim, and store uses them all */
  const lexpr *body;         /* value per point (REDUCTION: the value reduced) */
  const coil_sym *store;     /* index of the output element, over dvars (kept dims only) */
  /* SCATTER: a pointwise node over its space whose store index also uses the variables of
   * the indirect values store_ind[] and whose store combines (mode); `out` starts as the
   * contents of buffer `init` and takes over its storage (init has no reader after this node) */
  int init;
  coil_store_mode mode;
  int nstore_ind;
  const lexpr *store_ind[3];
  /* EXTERN */
  const char *op;            /* aten op name */
  int nins, nouts;
  int *ins;                  /* buffers, or -1 - view number for a strided view (see views) */
  int *outs;
  int nxparams;
  coil_xparam *xparams;
  /* scheduling */
  const char *origins;       /* source ATen ops, space separated */
  bool live;                 /* reached from the outputs */
  int group;                 /* fused group (kernel) */
} lnode;

/* A strided view of a buffer handed to a library op (ReinterpretView). */
typedef struct lview {
  int buffer;
  int rank;
  const coil_sym *sizes[COIL_MAX_RANK];
  const coil_sym *strides[COIL_MAX_RANK];
  const coil_sym *offset;
} lview;

typedef struct lowering {
  const coil_graph *g;
  coil_arena *arena;
  coil_symctx *sym;          /* the program's: size symbols are renamed s0, s1, ... */
  const coil_sym **graph_syms; /* graph size symbol v -> program symbol */
  int nbufs, capbufs;
  lbuf *bufs;
  int nnodes, capnodes;
  lnode *nodes;
  int nviews, capviews;
  lview *views;
  int *outputs;              /* per graph output: its buffer, or -1 - view (dense, row-major,
                                the output's sizes) */
  lazy **values;             /* per graph value (inputs then nodes): NULL for none/tuples */
  lazy ***tuples;            /* per graph value: elements of tuple values */
  int ndvars;                /* counter for fresh dimension variables */
  const char *cur_origin;    /* the op being lowered */
  int *readers;              /* per version of a graph value (see version): statement
                                arguments that read it */
  /* In-place ops (docs/graph-format.md, Mutation): a statement that writes its first argument
   * in place makes that name stand for a new version from then on. A version is named by the
   * slot of the statement that made it (the value's own slot first), -1 when unknown (a base
   * written through a view). */
  int *version;              /* per graph value: its current version, updated as lowering goes */
  int *final_version;        /* per graph value: its version after the last statement */
  bool *mutated;             /* per graph input: written in place, copied back at the end */
  int ncopy_backs;
  int *copy_back_input;      /* graph input position */
  int *copy_back_buf;        /* the buffer holding its final value (is_output) */
  int nattention;            /* attention chains lowered as coil.attention (attention.h) */
  struct coil_attention_match *attention;
  int nlibrary;              /* library ops the target claims (coil_compile_options) */
  const coil_library_claim *library;
  const coil_compile_options *opts; /* the caller's, for the scheduler and the emitter */
  coil_diag *d;
} lowering;

/* lower.c */
int coil_lower(lowering *L, const coil_graph *g, const coil_compile_options *o, coil_symctx *sym,
               coil_arena *a, coil_diag *d);
/* Whether op (one the core can also generate) is a library call for this result dtype: the
 * compile options list it as claimed by the target plugin. */
bool coil_lower_is_library(const lowering *L, const char *op, coil_dtype dt);
/* The sizes of a graph type in the lowering's symbols (the graph's symbols renamed s0, s1...). */
void coil_lower_sizes(lowering *L, const coil_type *t, const coil_sym **out);
lazy *lz_new(lowering *L, coil_dtype dt, int rank, const coil_sym *const *sizes);
const lexpr *lx_load(lowering *L, int buffer, const coil_sym *index);
const lexpr *lx_const(lowering *L, coil_dtype dt, double f, int64_t i);
const lexpr *lx_index(lowering *L, const coil_sym *index);
const lexpr *lx_op(lowering *L, coil_kop op, coil_dtype dt, const lexpr *a, const lexpr *b,
                   const lexpr *c);
const lexpr *lx_cast(lowering *L, const lexpr *a, coil_dtype dt);
/* Indirect indexing: v (an integer expression) as an index into a dimension of `bound` elements,
 * checked at run time; its variable (r->index) may appear in the index of a load made by
 * lx_load_at with r among its indirect values (at most 3). */
const lexpr *lx_indirect(lowering *L, const lexpr *v, const coil_sym *bound);
const lexpr *lx_load_at(lowering *L, int buffer, const coil_sym *index, int n,
                        const lexpr *const *indirect);
/* e with variables vars[i] replaced by repl[i] in every index (memoised: shared subtrees stay
 * shared). */
const lexpr *lx_subst(lowering *L, const lexpr *e, int n, const int *vars,
                      const coil_sym *const *repl);
/* The element of z at index idx (one expression per dimension of z). */
const lexpr *lz_at(lowering *L, const lazy *z, const coil_sym *const *idx);
int lz_realize(lowering *L, lazy *z);        /* returns the buffer; z becomes a load of it */
/* The buffer z is, when z is exactly a contiguous load of a whole buffer of z's sizes (as a
 * reduction's result read back is): then also z->realized. Else -1. */
int lz_is_buffer(lowering *L, lazy *z);
int lbuf_new(lowering *L, coil_dtype dt, int rank, const coil_sym *const *sizes);
int lnode_new(lowering *L, lnode_kind kind, int out);
/* A reduction of z over dims red[] (COIL_MAX_RANK flags, read whole; keepdim: size-1 dims
 * stay); realized. */
lazy *lz_reduce(lowering *L, const lazy *z, const bool *red, bool keepdim, coil_reduction r,
                coil_dtype out_dtype);
/* The inclusive scan of z along dim (sum, prod, max or min), in z's order along it: z's shape,
 * realized by a scan node (a reduction node with `scan`, alone in its kernel but for pointwise
 * neighbours). */
lazy *lz_scan(lowering *L, const lazy *z, int dim, coil_reduction r, coil_dtype out_dtype);
/* z as a view for a library op: an existing buffer with strides, or realized first. */
int lz_as_view(lowering *L, lazy *z);        /* >= 0 buffer, < 0: -1 - view index */
/* The same for a matmul operand: a view only where one of its last two dims has unit stride (or
 * size 1), as BLAS libraries need; else realized densely. */
int lz_as_matrix_view(lowering *L, lazy *z);
/* The buffer x is in, row-major: x's own when it is exactly one, else x realized. */
int coil_lower_buffer_of(lowering *L, lazy *x);

/* lower_conv.c */
int coil_lower_conv(lowering *L, const coil_node *n);

/* lower_ops.c */
int coil_lower_node(lowering *L, const coil_node *n);
/* What the lowering of one graph node n reads and writes (shared by lower_*.c). */
lazy *op_arg(lowering *L, const coil_node *n, int i); /* bound tensor argument i; NULL: None or a number */
const coil_lit *op_lit(const coil_node *n, const char *name); /* bound argument by schema name */
lazy *op_result(lowering *L, const coil_node *n, int k); /* shaped as n's type (tuple element k) */
void op_set_value(lowering *L, const coil_node *n, lazy *z);
void op_set_tuple(lowering *L, const coil_node *n, lazy **elems);
coil_dtype opmath_dtype(coil_dtype t);  /* the dtype arithmetic runs in: f16, bf16 -> f32 */
/* lo <= i < hi, as a bool expression */
const lexpr *lx_in_range(lowering *L, const coil_sym *i, const coil_sym *lo, const coil_sym *hi);
/* i clamped into [0, size - 1]: a load that stays in bounds where a select discards it */
const coil_sym *clamped_index(lowering *L, const coil_sym *i, const coil_sym *size);

/* lower_scan.c: cumsum as a scan where the target does not claim it (1: a library call) */
int coil_lower_cumsum(lowering *L, const coil_node *n);

/* lower_index.c: embedding, gather and index.Tensor as indirect loads */
int coil_lower_index(lowering *L, const coil_node *n);

/* lower_scatter.c: scatter, scatter_add, scatter_reduce, index_put, embedding_dense_backward
 * (copy, then stores through indirect indices), select_scatter and slice_scatter (pointwise) */
int coil_lower_scatter(lowering *L, const coil_node *n);
/* After in-place statement n is lowered: its first argument's name stands for n's result; where
 * that argument is a slice or select of a base, the base takes the new values in that place too. */
void coil_lower_mutation(lowering *L, const coil_node *n);

/* The offset of element idx of a dense row-major tensor of these sizes (lower_index.c). */
const coil_sym *coil_lower_row_major(lowering *L, int rank, const coil_sym *const *sizes,
                                     const coil_sym *const *idx);

/* lower_pool.c: max_pool{2,3}d_with_indices, avg_pool{2,3}d and the adaptive average pools as
 * window reductions */
int coil_lower_pool(lowering *L, const coil_node *n);

/* lower_backward.c: pooling and norm backward ops as gather-style reductions */
int coil_lower_backward(lowering *L, const coil_node *n);

/* lower_pairwise.c: sort, cdist and pdist as reductions over pairs */
int coil_lower_pairwise(lowering *L, const coil_node *n);

/* lower_sample.c: grid_sampler_2d and _embedding_bag as indirect loads */
int coil_lower_sample(lowering *L, const coil_node *n);

/* lower_math.c: ops.def's pointwise math section. The unary form computes op ew of x (already
 * in the computation dtype dt) or returns NULL when ew is not one of them; remainder of a and b
 * in dt. */
const lexpr *coil_lower_math_unary(lowering *L, int ew, const lexpr *x, coil_dtype dt, const coil_node *n);
const lexpr *coil_lower_remainder(lowering *L, const lexpr *a, const lexpr *b, coil_dtype dt);

/* lower_shapes.c: flip, repeat, index_select, diagonal, as_strided, empty, the reflection and
 * replication pads, upsampling, group_norm, batch norm with statistics, native_dropout */
int coil_lower_shapes(lowering *L, const coil_node *n);

#endif
