/* ops.h — the op table (ops.def) seen from C: ids, kinds, schemas and argument binding.
 * The table is constant data; schemas are parsed on demand into a caller-owned coil_schema,
 * so there is no global mutable state. */
#ifndef COIL_OPS_H
#define COIL_OPS_H

#include "graph.h"

typedef enum coil_op_id {
#define OP(id, name, kind, schema, rule, sub) COIL_OP_##id,
#include "ops.def"
#undef OP
  COIL_OP_COUNT
} coil_op_id;

typedef enum coil_op_kind {
  COIL_OPK_POINTWISE, COIL_OPK_REDUCTION, COIL_OPK_VIEW, COIL_OPK_MOVE, COIL_OPK_EXTERN,
  COIL_OPK_COMPOSITE, COIL_OPK_CREATION, COIL_OPK_NOOP,
} coil_op_kind;

/* Rule families: how an op's type is inferred and how the reference interpreter runs it. */
#define COIL_RULES(R) \
  R(UNARY_SAME) R(UNARY_FLOAT) R(UNARY_BOOL) R(BINARY) R(BINARY_FLOAT) R(COMPARE) R(WHERE) \
  R(CLAMP) R(TO_COPY) R(FULL) R(FULL_LIKE) R(ARANGE) R(REDUCE) R(VAR) R(ARG) R(MINMAX_DIM) \
  R(SOFTMAX) R(LAYER_NORM) R(BATCH_NORM) R(RESHAPE) R(PERMUTE) R(TRANSPOSE) R(EXPAND) \
  R(SLICE) R(SELECT) R(SQUEEZE) R(UNSQUEEZE) R(CLONE) R(COPY) R(CAT) R(SPLIT) R(PAD) \
  R(INDEX) R(GATHER) R(EMBEDDING) R(MATMUL) R(CONV) R(POOL) R(TOPK) R(CUMSUM) R(ASSERT_META) R(GETITEM) \
  R(POOL_BWD) R(NORM_BWD) R(SORT) R(CDIST) R(CONV_BWD) R(COL2IM) R(GRID_SAMPLE) R(EMBEDDING_BAG) \
  R(FLIP) R(REPEAT) R(INDEX_SELECT) R(DIAGONAL) R(AS_STRIDED) R(EMPTY) R(MODE_PAD) R(UPSAMPLE) \
  R(GROUP_NORM) R(BATCH_NORM_STATS) R(DROPOUT) R(ADAPTIVE_POOL) R(SYM_SIZE) \
  R(SCATTER) R(INDEX_PUT) R(EMBEDDING_BWD) R(SELECT_SCATTER) R(SLICE_SCATTER) R(MASKED_SCATTER)
typedef enum coil_rule {
#define R(x) COIL_RULE_##x,
  COIL_RULES(R)
#undef R
  COIL_RULE_COUNT
} coil_rule;

/* Elementwise functions (SUB of pointwise ops). */
typedef enum coil_ew {
  EW_ABS, EW_NEG, EW_RELU, EW_FLOOR, EW_CEIL, EW_ROUND, EW_TRUNC, EW_BITNOT, EW_LEAKY_RELU,
  EW_EXP, EW_LOG, EW_LOG1P, EW_SQRT, EW_RSQRT, EW_RECIPROCAL, EW_SIN, EW_COS, EW_TANH,
  EW_SIGMOID, EW_ERF, EW_GELU, EW_SILU, EW_LOGICAL_NOT,
  EW_ADD, EW_SUB, EW_RSUB, EW_MUL, EW_DIV, EW_DIV_MODE, EW_POW, EW_MAXIMUM, EW_MINIMUM,
  EW_BITAND, EW_BITOR, EW_LOGICAL_AND, EW_LOGICAL_OR, EW_EQ, EW_NE, EW_LT, EW_LE, EW_GT, EW_GE,
  /* pointwise math (core/ref_math.c, core/lower_math.c) */
  EW_TAN, EW_SINH, EW_COSH, EW_ASIN, EW_ACOS, EW_ATAN, EW_ASINH, EW_ACOSH, EW_ATANH, EW_EXPM1,
  EW_LOG2, EW_LOG10, EW_SIGN, EW_ISNAN, EW_ISINF, EW_ELU, EW_HARDTANH,
  EW_ATAN2, EW_FMOD, EW_REMAINDER, EW_BITXOR, EW_LOGICAL_XOR,
} coil_ew;

/* Reductions (SUB of REDUCE, ARG and MINMAX_DIM ops). */
typedef enum coil_red { RED_SUM, RED_MEAN, RED_PROD, RED_MAX, RED_MIN, RED_ANY } coil_red;

struct coil_op {
  coil_op_id id;
  const char *name;     /* "aten.add.Tensor" */
  coil_op_kind kind;
  const char *schema;   /* "Tensor self, Tensor other, *, Scalar alpha=1" */
  coil_rule rule;
  int sub;
};

/* Parameter types of ATen schemas. */
typedef enum coil_ptype {
  COIL_P_TENSOR, COIL_P_TENSOR_LIST, COIL_P_OPT_TENSOR_LIST, COIL_P_SCALAR, COIL_P_INT,
  COIL_P_INT_LIST, COIL_P_FLOAT, COIL_P_BOOL, COIL_P_STR, COIL_P_DTYPE, COIL_P_LAYOUT,
  COIL_P_DEVICE, COIL_P_MEMFMT, COIL_P_ANY,
  COIL_P_FLOAT_LIST,
} coil_ptype;

typedef struct coil_param {
  char name[32];
  coil_ptype type;
  bool optional;        /* T? : None accepted */
  bool kwonly;          /* after '*' */
  bool mutated;         /* Tensor(a!): the op writes this argument in place */
  int fixed_len;        /* int[2]: a single int expands to this many; 0 otherwise */
  bool has_default;
  coil_lit def;         /* default value (lists of ints only need up to 8 items) */
  coil_lit def_items[COIL_MAX_RANK];
} coil_param;

#define COIL_MAX_PARAMS 12
typedef struct coil_schema {
  int nparams;
  coil_param params[COIL_MAX_PARAMS];
} coil_schema;

const coil_op *coil_op_lookup(const char *name);   /* NULL if not in the table */
const coil_op *coil_op_get(coil_op_id id);
const char *coil_op_kind_name(coil_op_kind k);
const char *coil_rule_name(coil_rule r);
/* Parse op->schema. Fails only on a malformed table entry (a bug), which the unit tests rule out. */
int coil_schema_parse(const coil_op *op, coil_schema *s, coil_diag *d);
/* Whether op is an in-place overload: its first parameter is Tensor(a!), written in place, and
 * its result is that tensor (aten.index_put_.default). See docs/graph-format.md, Mutation. */
bool coil_op_is_inplace(const coil_op *op);
/* Index of parameter `name` in s, or -1. */
int coil_schema_find(const coil_schema *s, const char *name);

/* Type inference (infer.c): bind node->args to the schema into node->bound, check argument
 * types, and compute node->out->type. Errors name file:line:col. */
int coil_infer_node(coil_graph *g, coil_node *n, coil_diag *d);
/* PyTorch's result_type over tensors (by their rank and dtype) and Python numbers: the dtype in
 * which a pointwise op computes. Literals that are not tensors or numbers are skipped. */
coil_dtype coil_infer_common_dtype(const coil_lit *const *lits, int n);

#endif
