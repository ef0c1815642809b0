/* partition.c — partial offload: see partition.h.
 *
 * A part is made by printing a shallow copy of the program whose arrays hold only that part
 * (its inputs renamed argN, the kernels it calls, its lines, symbol lines bound from its own
 * inputs, an output line) and parsing the text back: the part then owns its arena and symbols,
 * and the verifier checks it like any program. */
#include "partition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/arena.h"
#include "coil/strbuf.h"
#include "coil/sym.h"

static char *
dup(const char *s)
{
  size_t n = strlen(s) + 1;
  return memcpy(coil_xmalloc(n), s, n);
}

static bool
is_work(const coil_line *l)
{
  return l->kind == COIL_LINE_KERNEL_CALL || l->kind == COIL_LINE_EXTERN_CALL;
}

/* The buffer whose storage b is (a view's base, transitively). */
static int
root_of(const coil_wir_program *p, int b)
{
  while (b >= 0 && p->buffers[b].kind == COIL_BUF_VIEW)
    b = p->buffers[b].base;
  return b;
}

/* Whether work line l writes buffer b (a kernel's output params, an extern call's outs). */
static bool
writes(const coil_wir_program *p, const coil_line *l, int b)
{
  if (l->kind == COIL_LINE_KERNEL_CALL) {
    const coil_kernel *k = &p->kernels[l->kernel];
    for (int i = 0; i < l->nargs && i < k->nparams; i++)
      if (k->params[i].is_output && l->args[i] == b)
        return true;
  } else if (l->kind == COIL_LINE_EXTERN_CALL) {
    for (int i = 0; i < l->nouts; i++)
      if (l->outs[i] == b)
        return true;
  }
  return false;
}

/* The state of one plan. */
typedef struct planner {
  const coil_wir_program *p;
  int nsegs;
  int *seg;        /* per line: its part, or -1 (program-level, or placed per part) */
  int *seg_owner;  /* per part: its backend */
  int *def;        /* per buffer: the part whose line defines its storage (alloc, reuse,
                      multi_output), -1 for graph inputs and views */
  bool *used;      /* nsegs x nbuffers: part s references buffer b */
  bool *out;       /* nsegs x nbuffers: part s must hand buffer b on */
  coil_diag *d;
} planner;

#define USED(pl, s, b) (pl)->used[(size_t)(s) * (size_t)(pl)->p->nbuffers + (size_t)(b)]
#define OUT(pl, s, b) (pl)->out[(size_t)(s) * (size_t)(pl)->p->nbuffers + (size_t)(b)]

/* Marks b and the buffers it is a view of as referenced by part s. */
static void
use(planner *pl, int s, int b)
{
  for (; b >= 0; b = pl->p->buffers[b].kind == COIL_BUF_VIEW ? pl->p->buffers[b].base : -1)
    USED(pl, s, b) = true;
}

/* Parts: each work line to the first backend that claims it; consecutive lines on one backend
 * make a part. */
static int
assign(planner *pl, int nbackends, const char *const *names, coil_claim_fn claim, void *user)
{
  const coil_wir_program *p = pl->p;
  int cur = -1;
  for (int l = 0; l < p->nlines; l++) {
    const coil_line *ln = &p->lines[l];
    pl->seg[l] = -1;
    if (!is_work(ln))
      continue;
    int who = -1;
    coil_strbuf why = {0};
    for (int k = 0; k < nbackends && who < 0; k++) {
      char w[256] = "";
      if (claim(user, k, p, ln, w, sizeof w))
        who = k;
      else
        coil_strbuf_printf(&why, "%s%s: %s", k ? "; " : "", names[k], w[0] ? w : "not claimed");
    }
    if (who < 0) {
      coil_diag_set(pl->d, "partition of %s: no backend claims line %d (%s %s): %s", p->name, l + 1,
                    ln->kind == COIL_LINE_KERNEL_CALL ? "kernel_call" : "extern_call",
                    ln->kind == COIL_LINE_KERNEL_CALL ? p->kernels[ln->kernel].name : ln->op,
                    why.s ? why.s : "");
      coil_strbuf_free(&why);
      return -1;
    }
    coil_strbuf_free(&why);
    if (cur < 0 || pl->seg_owner[cur] != who)
      pl->seg_owner[++cur] = who;
    pl->seg[l] = cur;
  }
  pl->nsegs = cur + 1;
  return 0;
}

/* The part of each bookkeeping line, and what each part references. */
static int
place_lines(planner *pl)
{
  const coil_wir_program *p = pl->p;
  for (int b = 0; b < p->nbuffers; b++)
    pl->def[b] = -1;
  for (int l = 0; l < p->nlines; l++) {
    const coil_line *ln = &p->lines[l];
    switch (ln->kind) {
    case COIL_LINE_ALLOC: case COIL_LINE_REUSE: /* with the first call that writes it */
      for (int m = l + 1; m < p->nlines && pl->seg[l] < 0; m++)
        if (is_work(&p->lines[m]) && writes(p, &p->lines[m], ln->buffer))
          pl->seg[l] = pl->seg[m];
      for (int m = l + 1; m < p->nlines && pl->seg[l] < 0; m++) /* written by nobody */
        if (is_work(&p->lines[m]))
          pl->seg[l] = pl->seg[m];
      if (pl->seg[l] < 0)
        pl->seg[l] = pl->nsegs - 1;
      pl->def[ln->buffer] = pl->seg[l];
      break;
    case COIL_LINE_MULTI_OUTPUT: /* with its extern call */
      for (int m = 0; m < l; m++)
        if (p->lines[m].kind == COIL_LINE_EXTERN_CALL && writes(p, &p->lines[m], ln->source))
          pl->seg[l] = pl->seg[m];
      if (pl->seg[l] < 0)
        return coil_diag_set(pl->d, "partition of %s: line %d: multi_output of a buffer no extern call "
                             "wrote", p->name, l + 1);
      pl->def[ln->buffer] = pl->seg[l];
      break;
    case COIL_LINE_COPY_BACK:
      return coil_diag_set(pl->d, "partition of %s: line %d updates input %s in place (copy_back); a "
                           "graph that does cannot be split across backends yet", p->name, l + 1,
                           p->buffers[ln->buffer].name);
    case COIL_LINE_COMMENT: /* with the next call */
      for (int m = l + 1; m < p->nlines && pl->seg[l] < 0; m++)
        if (is_work(&p->lines[m]))
          pl->seg[l] = pl->seg[m];
      break;
    default: break; /* symbol, assert, view, free, output: placed per part below */
    }
  }
  for (int l = 0; l < p->nlines; l++) {
    const coil_line *ln = &p->lines[l];
    int s = pl->seg[l];
    if (s < 0)
      continue;
    for (int i = 0; i < ln->nargs; i++)
      use(pl, s, ln->args[i]);
    for (int i = 0; i < ln->nouts; i++)
      use(pl, s, ln->outs[i]);
    if (ln->kind == COIL_LINE_MULTI_OUTPUT)
      use(pl, s, ln->source);
    if (ln->kind == COIL_LINE_ALLOC || ln->kind == COIL_LINE_REUSE || ln->kind == COIL_LINE_MULTI_OUTPUT)
      use(pl, s, ln->buffer);
    if (!is_work(ln))
      continue;
    for (int b = 0; b < p->nbuffers; b++) /* a storage made elsewhere must not be written here */
      if (writes(p, ln, b) && pl->def[root_of(p, b)] != s)
        return coil_diag_set(pl->d, "partition of %s: line %d writes %s, whose storage %s another part "
                             "makes: a storage written by two parts cannot be split yet", p->name,
                             l + 1, p->buffers[b].name,
                             pl->def[root_of(p, b)] < 0 ? "is a graph input, which" : "is one");
  }
  /* what each part hands on: storages later parts read, and the graph's outputs */
  const coil_line *ol = NULL;
  for (int l = 0; l < p->nlines; l++)
    if (p->lines[l].kind == COIL_LINE_OUTPUT)
      ol = &p->lines[l];
  for (int s = 0; s < pl->nsegs; s++)
    for (int b = 0; b < p->nbuffers; b++) {
      int r = root_of(p, b);
      if (USED(pl, s, b) && r == b && pl->def[b] >= 0 && pl->def[b] < s)
        OUT(pl, pl->def[b], b) = true;
    }
  for (int i = 0; ol && i < ol->nargs; i++) {
    int b = ol->args[i], r = root_of(p, b);
    if (pl->def[r] >= 0) { /* the part that makes its storage hands it (or its view) back */
      use(pl, pl->def[r], b);
      OUT(pl, pl->def[r], b) = true;
    } else if (b != r) {
      return coil_diag_set(pl->d, "partition of %s: output %d is a view of graph input %s; not split "
                           "yet", p->name, i, p->buffers[r].name);
    }
  }
  return 0;
}

/* Finds, among part s's inputs (arg[b] >= 0), a buffer one of whose dimensions is the size (or
 * stride) symbol sym: its index, with *dim. */
static int
carrier(const planner *pl, const int *arg, const coil_line *sl, int *dim)
{
  const coil_wir_program *p = pl->p;
  if (arg[sl->buffer] >= 0) { /* the graph input that defines it, when the part has it */
    *dim = sl->dim;
    return sl->buffer;
  }
  for (int b = 0; b < p->nbuffers; b++) {
    if (arg[b] < 0)
      continue;
    for (int k = 0; k < p->buffers[b].rank; k++)
      if ((sl->is_stride ? p->buffers[b].strides[k] : p->buffers[b].sizes[k]) == sl->sym) {
        *dim = k;
        return b;
      }
  }
  return -1;
}

/* Part s as a standalone program (printed, parsed, verified), its values into part. */
static int
build_part(planner *pl, int s, const char *backend, coil_part *part, coil_strbuf *plan)
{
  const coil_wir_program *p = pl->p;
  int nb = p->nbuffers, rc = -1;
  coil_buffer *bufs = malloc(((size_t)nb + 1) * sizeof *bufs);
  int *arg = malloc(((size_t)nb + 1) * sizeof *arg);
  int *kmap = malloc(((size_t)p->nkernels + 1) * sizeof *kmap);
  coil_kernel *kernels = malloc(((size_t)p->nkernels + 1) * sizeof *kernels);
  coil_wir_input *inputs = malloc(((size_t)nb + 1) * sizeof *inputs);
  coil_line *lines = malloc(((size_t)p->nlines * 2 + 2) * sizeof *lines);
  int *outs = malloc(((size_t)nb + 1) * sizeof *outs);
  char **names = calloc((size_t)nb + 1, sizeof *names);
  if (!bufs || !arg || !kmap || !kernels || !inputs || !lines || !outs || !names)
    abort();
  memcpy(bufs, p->buffers, (size_t)nb * sizeof *bufs);
  int nin = 0, nk = 0, nl = 0, nout = 0;
  /* inputs: storages it references that it does not make, in buffer order */
  for (int b = 0; b < nb; b++) {
    arg[b] = -1;
    if (!USED(pl, s, b) || root_of(p, b) != b || pl->def[b] == s)
      continue;
    arg[b] = nin;
    names[b] = coil_xmalloc(24);
    snprintf(names[b], 24, "arg%d", nin);
    const char *label = bufs[b].name;
    bool param = false;
    for (int i = 0; i < p->ninputs; i++)
      if (p->inputs[i].buffer == b)
        label = p->inputs[i].label, param = p->inputs[i].is_param;
    bufs[b].kind = COIL_BUF_INPUT;
    bufs[b].base = -1;
    bufs[b].name = names[b];
    inputs[nin++] = (coil_wir_input){.buffer = b, .label = label, .is_param = param};
  }
  for (int b = 0; b < nb; b++)
    if (bufs[b].kind == COIL_BUF_REUSE && pl->def[b] == s) { /* its own storage in a part */
      bufs[b].kind = COIL_BUF_ALLOC;
      bufs[b].base = -1;
    }
  for (int k = 0; k < p->nkernels; k++)
    kmap[k] = -1;
  /* symbol lines, from the part's own inputs */
  for (int l = 0; l < p->nlines; l++) {
    const coil_line *ln = &p->lines[l];
    int dim, b;
    if (ln->kind == COIL_LINE_SYMBOL && (b = carrier(pl, arg, ln, &dim)) >= 0) {
      lines[nl] = *ln;
      lines[nl].buffer = b;
      lines[nl++].dim = dim;
    }
  }
  for (int l = 0; l < p->nlines; l++) {
    const coil_line *ln = &p->lines[l];
    bool keep = pl->seg[l] == s;
    if (ln->kind == COIL_LINE_ASSERT)
      keep = arg[ln->buffer] >= 0;
    else if (ln->kind == COIL_LINE_VIEW)
      keep = USED(pl, s, ln->buffer);
    else if (ln->kind == COIL_LINE_FREE) /* its own storages that it does not hand on */
      keep = pl->def[ln->buffer] == s && !OUT(pl, s, ln->buffer);
    if (!keep)
      continue;
    lines[nl] = *ln;
    if (ln->kind == COIL_LINE_REUSE)
      lines[nl].kind = COIL_LINE_ALLOC;
    if (ln->kind == COIL_LINE_KERNEL_CALL) {
      if (kmap[ln->kernel] < 0) {
        kmap[ln->kernel] = nk;
        kernels[nk++] = p->kernels[ln->kernel];
      }
      lines[nl].kernel = kmap[ln->kernel];
    }
    nl++;
  }
  for (int b = 0; b < nb; b++)
    if (OUT(pl, s, b))
      outs[nout++] = b;
  lines[nl++] = (coil_line){.kind = COIL_LINE_OUTPUT, .nargs = nout, .args = outs, .buffer = -1};

  coil_wir_program q = *p;
  char name[256];
  snprintf(name, sizeof name, "%s_part%d", p->name ? p->name : "graph", s);
  q.name = name;
  q.buffers = bufs;
  q.ninputs = nin, q.inputs = inputs;
  q.nkernels = nk, q.kernels = kernels;
  q.nlines = nl, q.lines = lines;
  q.peak_bytes = -1;
  char *text = coil_wir_print(&q);
  coil_diag why = {{0}};
  part->program = coil_wir_parse(name, text, strlen(text), &why);
  if (!part->program || coil_wir_verify(part->program, &why) != 0) {
    coil_diag_set(pl->d, "partition of %s: part %d (on %s) is not a valid program: %s", p->name, s,
                  backend, why.msg);
    goto done;
  }
  part->backend = pl->seg_owner[s];
  part->ninputs = nin;
  part->input_values = calloc((size_t)nin + 1, sizeof *part->input_values);
  part->noutputs = nout;
  part->output_values = calloc((size_t)nout + 1, sizeof *part->output_values);
  if (!part->input_values || !part->output_values)
    abort();
  coil_strbuf_printf(plan, "part %d on %s:", s, backend);
  for (int i = 0; i < nin; i++) {
    int b = inputs[i].buffer;
    bool graph_input = p->buffers[b].kind == COIL_BUF_INPUT;
    coil_strbuf v = {0};
    coil_strbuf_printf(&v, "%s%s", graph_input ? "input " : "", graph_input ? inputs[i].label : p->buffers[b].name);
    part->input_values[i] = v.s;
    coil_strbuf_printf(plan, "%s %s%s", i ? "," : " reads", graph_input ? "%" : "", graph_input ? inputs[i].label : v.s);
  }
  for (int i = 0; i < nout; i++) {
    part->output_values[i] = dup(p->buffers[outs[i]].name);
    coil_strbuf_printf(plan, "%s %s", i ? "," : "; makes", p->buffers[outs[i]].name);
  }
  coil_strbuf_puts(plan, "\n");
  for (int l = 0; l < part->program->nlines; l++) {
    const coil_line *ln = &part->program->lines[l];
    if (ln->kind == COIL_LINE_KERNEL_CALL)
      coil_strbuf_printf(plan, "  kernel_call %s\n", part->program->kernels[ln->kernel].name);
    else if (ln->kind == COIL_LINE_EXTERN_CALL)
      coil_strbuf_printf(plan, "  extern_call %s\n", ln->op);
  }
  rc = 0;
done:
  free(text);
  free(bufs), free(arg), free(kmap), free(kernels), free(inputs), free(lines), free(outs);
  for (int b = 0; b < nb; b++)
    free(names[b]);
  free(names);
  return rc;
}

int
coil_partition_plan(const coil_wir_program *p, int nbackends, const char *const *names,
                    coil_claim_fn claim, void *user, coil_partition *out, coil_diag *d)
{
  memset(out, 0, sizeof *out);
  planner pl = {.p = p, .d = d};
  int nb = p->nbuffers, rc = -1;
  pl.seg = calloc((size_t)p->nlines + 1, sizeof *pl.seg);
  pl.seg_owner = calloc((size_t)p->nlines + 1, sizeof *pl.seg_owner);
  pl.def = calloc((size_t)nb + 1, sizeof *pl.def);
  if (!pl.seg || !pl.seg_owner || !pl.def)
    abort();
  if (assign(&pl, nbackends, names, claim, user))
    goto done;
  int ns = pl.nsegs > 0 ? pl.nsegs : 1;
  pl.used = calloc((size_t)ns * (size_t)nb + 1, sizeof *pl.used);
  pl.out = calloc((size_t)ns * (size_t)nb + 1, sizeof *pl.out);
  if (!pl.used || !pl.out)
    abort();
  if (pl.nsegs == 0) { /* no calls at all: one part on the first backend */
    pl.nsegs = 1;
    pl.seg_owner[0] = 0;
  }
  if (place_lines(&pl))
    goto done;
  coil_strbuf plan = {0};
  coil_strbuf_printf(&plan, "partition of %s across", p->name);
  for (int k = 0; k < nbackends; k++)
    coil_strbuf_printf(&plan, "%s %s", k ? "," : "", names[k]);
  coil_strbuf_printf(&plan, ": %d part(s)\n", pl.nsegs);
  out->parts = calloc((size_t)pl.nsegs, sizeof *out->parts);
  if (!out->parts)
    abort();
  for (int s = 0; s < pl.nsegs; s++) {
    for (int i = 0; s > 0 && i < nb; i++) /* transfers into this part */
      if (USED(&pl, s, i) && root_of(p, i) == i && pl.def[i] >= 0 && pl.def[i] < s &&
          pl.seg_owner[pl.def[i]] != pl.seg_owner[s])
        coil_strbuf_printf(&plan, "transfer %s: %s -> %s\n", p->buffers[i].name,
                           names[pl.seg_owner[pl.def[i]]], names[pl.seg_owner[s]]);
    out->nparts = s + 1;
    if (build_part(&pl, s, names[pl.seg_owner[s]], &out->parts[s], &plan)) {
      coil_strbuf_free(&plan);
      goto done;
    }
  }
  const coil_line *ol = NULL;
  for (int l = 0; l < p->nlines; l++)
    if (p->lines[l].kind == COIL_LINE_OUTPUT)
      ol = &p->lines[l];
  out->noutputs = ol ? ol->nargs : 0;
  out->output_values = calloc((size_t)out->noutputs + 1, sizeof *out->output_values);
  if (!out->output_values)
    abort();
  coil_strbuf_puts(&plan, "outputs:");
  for (int i = 0; i < out->noutputs; i++) {
    int b = ol->args[i];
    const char *label = NULL;
    for (int k = 0; k < p->ninputs; k++)
      if (p->inputs[k].buffer == b)
        label = p->inputs[k].label;
    coil_strbuf v = {0};
    if (label)
      coil_strbuf_printf(&v, "input %s", label);
    else
      coil_strbuf_puts(&v, p->buffers[b].name);
    out->output_values[i] = v.s;
    coil_strbuf_printf(&plan, "%s %s%s", i ? "," : "", label ? "%" : "", label ? label : p->buffers[b].name);
  }
  coil_strbuf_puts(&plan, "\n");
  for (int s = 0; s < out->nparts; s++) {
    char *t = coil_wir_print(out->parts[s].program);
    coil_strbuf_printf(&plan, "\n# ---- part %d on %s ----\n%s", s, names[out->parts[s].backend], t);
    free(t);
  }
  out->plan = plan.s;
  rc = 0;
done:
  if (rc)
    coil_partition_free(out);
  free(pl.seg), free(pl.seg_owner), free(pl.def), free(pl.used), free(pl.out);
  return rc;
}

void
coil_partition_free(coil_partition *pt)
{
  for (int s = 0; s < pt->nparts; s++) {
    coil_part *x = &pt->parts[s];
    coil_wir_free(x->program);
    for (int i = 0; x->input_values && i < x->ninputs; i++)
      free(x->input_values[i]);
    for (int i = 0; x->output_values && i < x->noutputs; i++)
      free(x->output_values[i]);
    free(x->input_values);
    free(x->output_values);
  }
  free(pt->parts);
  for (int i = 0; pt->output_values && i < pt->noutputs; i++)
    free(pt->output_values[i]);
  free(pt->output_values);
  free(pt->plan);
  memset(pt, 0, sizeof *pt);
}
