/* graph.h — the in-memory graph (core-internal). A graph is what the parser builds from .coil
 * text: typed inputs, statements in program order (each an op applied to arguments), and the
 * returned values. Everything lives in the graph's arena; names are untrusted text and are only
 * ever printed back into .coil files or messages, never into generated code.
 *
 * Contract after coil_graph_parse succeeds: every statement's op is in the op table, its
 * arguments are bound to the op's schema (defaults filled in), every tensor value has an
 * inferred type, and any annotation in the source equalled the inferred type. */
#ifndef COIL_GRAPH_H
#define COIL_GRAPH_H

#include "coil/arena.h"
#include "coil/coil.h"
#include "coil/sym.h"

typedef struct coil_value coil_value;
typedef struct coil_op coil_op;

/* The type of a value: a tensor, a tuple of tensors (multi-output ops), or nothing (ops like
 * _assert_tensor_metadata that return no value). */
typedef enum { COIL_TYPE_NONE, COIL_TYPE_TENSOR, COIL_TYPE_TUPLE } coil_type_kind;

typedef struct coil_type {
  coil_type_kind kind;
  coil_dtype dtype;                   /* TENSOR */
  int rank;                           /* TENSOR */
  const coil_sym *dims[COIL_MAX_RANK];/* TENSOR: sizes, canonical sym expressions */
  int nelems;                         /* TUPLE */
  struct coil_type *elems;            /* TUPLE: arena-owned */
} coil_type;

/* A literal or a reference in an argument position. */
typedef enum {
  COIL_LIT_NONE,
  COIL_LIT_INT,
  COIL_LIT_FLOAT,
  COIL_LIT_BOOL,
  COIL_LIT_STR,
  COIL_LIT_DTYPE,
  COIL_LIT_VALUE,   /* %name */
  COIL_LIT_LIST,
  COIL_LIT_WORD,    /* contiguous_format channels_last preserve_format strided cpu cuda cuda:N */
} coil_lit_kind;

typedef struct coil_lit {
  coil_lit_kind kind;
  int64_t i;               /* INT, BOOL (0/1), device index for cuda:N (-1 when absent) */
  double f;                /* FLOAT */
  const char *s;           /* STR (unquoted), WORD */
  coil_dtype dtype;        /* DTYPE */
  coil_value *v;           /* VALUE */
  int n;                   /* LIST */
  struct coil_lit *items;  /* LIST */
  int line, col;
} coil_lit;

typedef enum { COIL_VAL_INPUT, COIL_VAL_PARAM, COIL_VAL_BUFFER, COIL_VAL_NODE } coil_value_kind;

struct coil_value {
  const char *name;        /* without the '%' */
  coil_value_kind kind;
  int index;               /* input position, or node index */
  coil_type type;
  /* in-place ops (docs/graph-format.md, Mutation), filled by the parser */
  const coil_value *alias; /* the result of an in-place op: the value whose tensor it names (the
                              first name of that tensor); NULL for the others */
  const coil_value *view_of; /* a view's base (view ops, and in-place writes through a view) */
  int made_at;             /* statement (from 1) that last set what this name reads; 0: input */
  int written_at;          /* first names of tensors: the last statement that wrote it, 0 none */
};

/* One argument as written: positional (name NULL) or keyword. */
typedef struct coil_arg {
  const char *name;
  coil_lit lit;
} coil_arg;

typedef struct coil_node {
  const coil_op *op;
  coil_value *out;
  bool annotated;          /* the source gave a type */
  int nargs;               /* as written, for printing */
  coil_arg *args;
  coil_lit *bound;         /* one per schema parameter, defaults filled in */
  int line, col;
} coil_node;

struct coil_graph {
  coil_arena *arena;
  coil_symctx *sym;
  const char *file;
  const char *name;
  int version;
  int ninputs;
  coil_value **inputs;
  int nnodes;
  coil_node *nodes;
  int noutputs;
  coil_value **outputs;
};

/* The first name of the tensor v names (v itself unless v is an in-place op's result). */
const coil_value *coil_value_root(const coil_value *v);
/* A base v is a view of that was written after v got its contents (v is stale), else NULL. */
const coil_value *coil_value_stale_base(const coil_value *v);
/* Checks the reads of statement n (index i) against earlier in-place writes and records n's own
 * write, if it is an in-place op (mutation.c). */
int coil_graph_note_mutation(coil_graph *g, coil_node *n, int i, coil_diag *d);
void coil_type_print(const coil_graph *g, const coil_type *t, coil_strbuf *b);
bool coil_type_equal(const coil_type *a, const coil_type *b);

#endif
