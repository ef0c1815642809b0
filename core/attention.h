/* attention.h — finding scaled dot-product attention in a graph (attention.c).
 *
 * Real exports spell attention out: bmm(q, kᵀ), a scale, an optional additive mask, _softmax
 * over the keys, optionally torch's guard for rows with no key (the "safe softmax": such a row
 * gives 0, not NaN), and bmm with v, with views between. When the target claims coil.attention,
 * lowering turns each match into one extern_call coil.attention (docs/wrapper-ir.md) and the
 * chain's other nodes, read by nothing else, are dropped. */
#ifndef COIL_ATTENTION_H
#define COIL_ATTENTION_H

#include <stdbool.h>

#include "coil/coil.h"
#include "coil/strbuf.h"
#include "graph.h"

typedef struct coil_attention_match {
  int node;                  /* the second bmm (its output is the attention's, viewed [N, L, Ev]) */
  const coil_value *q;       /* [*B, L, E], each batch dim B's or 1 */
  const coil_value *kt;      /* [*B, E, S]: k transposed, as the first bmm reads it */
  const coil_value *v;       /* [*B, S, Ev] */
  const coil_value *mask;    /* added to the scores, broadcastable to [*B, L, S]; NULL: none */
  const coil_value *scores;  /* the softmax's input [*B, L, S]: B, L and S are its sizes */
  double scale;
  bool zero_rows;            /* a row of all -inf gives 0 (the guarded softmax), else NaN */
} coil_attention_match;

/* Finds the attention chains of g. Returns the number of matches (at most cap, into m); each
 * bmm that reads a softmax but is not matched adds a line to why (when not NULL) saying why. */
int coil_attention_find(const coil_graph *g, coil_attention_match *m, int cap, coil_strbuf *why);

/* The dump's attention.txt: each match, whether the options' claims make it one call, and each
 * near miss with its reason. */
void coil_attention_dump(const coil_graph *g, const coil_compile_options *o, coil_strbuf *out);

#endif
