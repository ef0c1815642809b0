/* tier_random.c — the random tier: graphs from the generator (rgen.h), graph i of a run from
 * seed S + i, each compiled by the core and the plugin, run at one size (two sizes of s0 when
 * symbolic) on inputs from its seed, and compared with the reference interpreter like an op
 * case (conf_compare: dtype, shape, NMSE per dtype, integers exactly), plus the layout of every
 * output the program hands back (dense, row-major: the Wrapper IR contract). A plugin that only
 * emits has each graph compiled (its toolchain runs inside compile: NVRTC for cuda).
 *
 * A graph the core's checker refuses is the generator's mistake: counted and left out. A
 * failing graph is shrunk — statements cut (their results become inputs of the same type and
 * range), outputs dropped — while it still fails the same way, and printed with its seed:
 * `--seed S --count 1` replays it. Results: one line per failing graph and one summary line,
 * so that a run of millions (--time) keeps nothing else. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "artifact.h"
#include "conf.h"
#include "graph.h"
#include "rgen.h"

#define STMTS 8        /* statements a graph aims at */
#define BATCH 256      /* graphs per round of the process pool */
#define SHRINK_MAX 3   /* failing graphs shrunk per run (each costs a compile per attempt) */

typedef struct {
  uint64_t seed0;      /* case i is graphs seed0 + i*per .. + per - 1 */
  int per;             /* graphs per case (--batch) */
  const rg_graph *fixed; /* the shrinker's candidate, instead of a generated graph */
} batch;

static double
now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Checks each output buffer of p at s0: sizes as ref's, strides dense row-major (size-1 dims
 * may have any stride). */
static bool
layout_ok(const coil_wir_program *p, int64_t s0, const coil_tensor_list *want, char *msg, size_t n)
{
  int nv = coil_sym_nvars(p->sym);
  int64_t *vals = calloc((size_t)nv + 1, sizeof *vals);
  for (int v = 0; v < nv; v++)
    vals[v] = strcmp(coil_sym_var_name(p->sym, v), "s0") == 0 ? s0 : 0;
  bool ok = true;
  for (int l = 0; l < p->nlines && ok; l++) {
    const coil_line *ln = &p->lines[l];
    if (ln->kind != COIL_LINE_OUTPUT)
      continue;
    for (int k = 0; k < ln->nargs && k < want->n && ok; k++) {
      const coil_buffer *b = &p->buffers[ln->args[k]];
      const coil_tensor *w = &want->tensors[k];
      coil_diag d = {0};
      int64_t dense = 1;
      if (b->rank != w->rank) {
        snprintf(msg, n, "strides: output %d has rank %d in the program, expected %d", k, b->rank, w->rank);
        ok = false;
      }
      for (int i = b->rank - 1; i >= 0 && ok; i--) {
        int64_t size, stride;
        if (coil_sym_eval(p->sym, b->sizes[i], vals, nv, &size, &d) ||
            coil_sym_eval(p->sym, b->strides[i], vals, nv, &stride, &d)) {
          snprintf(msg, n, "strides: output %d: %.300s", k, d.msg);
          ok = false;
        } else if (size != w->shape[i]) {
          snprintf(msg, n, "strides: output %d has size %lld in dimension %d in the program, expected %lld", k,
                   (long long)size, i, (long long)w->shape[i]);
          ok = false;
        } else if (size != 1 && stride != dense) {
          snprintf(msg, n, "strides: output %d has stride %lld in dimension %d, expected %lld (dense)", k,
                   (long long)stride, i, (long long)dense);
          ok = false;
        }
        dense *= size;
      }
    }
  }
  free(vals);
  return ok;
}

/* Runs graph g (text already made) against ref; fills r. */
static void
run_graph(const conf_ctx *c, const rg_graph *rg, conf_result *r)
{
  coil_strbuf text = {0};
  rg_print(rg, &text, false);
  coil_diag d = {0};
  conf_prepared x = {0};
  r->status = CONF_FAIL;
  r->nmse = -1;
  coil_graph *g = coil_graph_parse("random.coil", text.s, text.len, &d);
  if (!g) { /* the generator's model and the checker disagree */
    r->status = CONF_SKIP;
    snprintf(r->msg, sizeof r->msg, "rejected by the checker: %.400s", d.msg);
    goto done;
  }
  if (conf_prepare(c, g, "graph", &x, r)) {
    if (r->status == CONF_SKIP && x.p) { /* an emit-only plugin: compiling is the check */
      coil_plugin_options o = conf_options(c);
      char dir[] = "/tmp/coil-conformance-XXXXXX";
      if (!mkdtemp(dir)) {
        r->status = CONF_FAIL;
        snprintf(r->msg, sizeof r->msg, "cannot create a temporary directory");
        goto done;
      }
      int rc = coil_plugin_compile(x.lp, x.inst, x.p, dir, &o, &d);
      coil_artifact_remove(dir);
      r->status = rc == 0 ? CONF_PASS : rc == -COIL_ERR_UNSUPPORTED ? CONF_UNSUPPORTED : CONF_FAIL;
      snprintf(r->msg, sizeof r->msg, "%s%.400s", rc && rc != -COIL_ERR_UNSUPPORTED ? "compile: " : "", rc ? d.msg : "");
    }
    goto done;
  }
  double worst = 0;
  for (int run = 0; run < (rg->sym ? 2 : 1); run++) {
    int64_t s0 = rg->s0[run];
    coil_tensor_list in = {0}, want = {0}, got = {0};
    bool ok = true;
    for (int i = 0; i < g->ninputs && ok; i++) {
      coil_tensor t;
      int v = atoi(g->inputs[i]->name + 1);
      if (rg_input_fill(rg, v, s0, &t, &d)) {
        snprintf(r->msg, sizeof r->msg, "input %s: %.400s", g->inputs[i]->name, d.msg);
        ok = false;
      } else {
        coil_tensor_list_add(&in, g->inputs[i]->name, &t);
      }
    }
    if (ok && coil_ref_run(g, &in, &want, &d)) {
      snprintf(r->msg, sizeof r->msg, "the reference interpreter cannot run the graph: %.400s", d.msg);
      ok = false;
    }
    coil_exec_checks chk = {.input_offset = run, .guard_bytes = 64};
    if (ok) {
      int rc = coil_artifact_exec_checked(x.lp, x.inst, x.art, x.p, &in, NULL, &chk, &got, &d);
      if (rc) {
        snprintf(r->msg, sizeof r->msg, "%s%.400s", rc == COIL_EXEC_GUARD ? "guard bytes: " : "run: ", d.msg);
        ok = false;
      }
    }
    if (ok && got.n != want.n) {
      snprintf(r->msg, sizeof r->msg, "outputs: %d, expected %d", got.n, want.n);
      ok = false;
    }
    for (int k = 0; ok && k < want.n; k++) {
      double nmse;
      char m[256];
      bool same = conf_compare(&got.tensors[k], &want.tensors[k], &nmse, m, sizeof m);
      worst = nmse > worst ? nmse : worst;
      if (!same) {
        if (rg->sym)
          snprintf(r->msg, sizeof r->msg, "out%d at s0=%lld: %s", k, (long long)s0, m);
        else
          snprintf(r->msg, sizeof r->msg, "out%d: %s", k, m);
        ok = false;
      }
    }
    if (ok)
      ok = layout_ok(x.p, s0, &want, r->msg, sizeof r->msg);
    coil_tensor_list_free(&in), coil_tensor_list_free(&want), coil_tensor_list_free(&got);
    if (!ok) {
      r->nmse = worst;
      goto done;
    }
  }
  r->status = CONF_PASS;
  r->nmse = worst;
done:
  conf_release(&x);
  coil_graph_free(g);
  coil_strbuf_free(&text);
}

/* Graphs seed .. seed + per - 1 as one program. */
static void
make(uint64_t seed, int per, rg_graph *g)
{
  rg_generate(g, seed, STMTS);
  for (int k = 1; k < per; k++) {
    rg_graph h;
    rg_generate(&h, seed + (uint64_t)k, STMTS);
    rg_append(g, &h);
    rg_free(&h);
  }
}

static void
run_case(const conf_ctx *c, int i, void *user, conf_result *r)
{
  const batch *b = user;
  if (b->fixed) {
    run_graph(c, b->fixed, r);
    return;
  }
  rg_graph g;
  make(b->seed0 + (uint64_t)i * (uint64_t)b->per, b->per, &g);
  run_graph(c, &g, r);
  rg_free(&g);
}

/* How a graph fails, for the shrinker's "still fails the same way". */
static const char *
failure_class(const conf_result *r)
{
  static const char *const keys[][2] = {
      {"crashed", "crash"},          {"timed out", "timeout"},      {"guard bytes", "guard"},
      {"the core cannot compile", "core"}, {"reference interpreter", "ref"}, {"strides", "strides"},
      {"NaN and Inf", "nan"},        {"NMSE", "values"},           {"element", "values"},
      {"size ", "shape"},            {"rank", "dtype-rank"},        {"run:", "run"},
      {"compile", "compile"},        {"outputs:", "outputs"}};
  if (r->status != CONF_FAIL)
    return "pass";
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
    if (strstr(r->msg, keys[k][0]))
      return keys[k][1];
  return "other";
}

/* One graph in its own process (a crash fails the candidate, not the suite). */
static conf_result
try_graph(const conf_ctx *c, const rg_graph *g)
{
  conf_ctx one = *c;
  one.results = NULL, one.errs = NULL, one.nresults = one.cap = 0, one.verbose = false, one.jobs = 1,
  one.list_only = false;
  batch b = {0, 1, g};
  conf_result r = {.tier = "random"};
  conf_run_cases(&one, 1, run_case, &b, &r);
  conf_results_free(&one);
  return r;
}

static rg_graph
copy_graph(const rg_graph *g)
{
  rg_graph h = *g;
  h.v = malloc(sizeof *h.v * (size_t)(g->capv ? g->capv : 1));
  h.s = malloc(sizeof *h.s * (size_t)(g->caps ? g->caps : 1));
  memcpy(h.v, g->v, sizeof *h.v * (size_t)g->nv);
  memcpy(h.s, g->s, sizeof *h.s * (size_t)g->ns);
  for (int s = 0; s < g->ns; s++)
    h.s[s].text = strdup(g->s[s].text);
  return h;
}

/* Tries candidate h: kept (it replaces g) when it fails as cls, else freed. */
static bool
keep(const conf_ctx *c, rg_graph *g, rg_graph *h, const char *cls, conf_result *last, int *tries)
{
  ++*tries;
  conf_result r = try_graph(c, h);
  if (strcmp(failure_class(&r), cls) != 0) {
    rg_free(h);
    return false;
  }
  rg_free(g);
  *g = *h, *last = r;
  return true;
}

/* Shrinks graph `seed` while it fails as `cls`; prints the smallest found. */
static void
shrink(const conf_ctx *c, uint64_t seed, const conf_result *first, FILE *out)
{
  const char *cls = failure_class(first);
  rg_graph g;
  make(seed, c->random_batch, &g);
  int before = rg_live_stmts(&g), tries = 0;
  conf_result last = *first;
  /* the earliest value that fails alone as the output */
  for (int v = 0; v < g.nv && tries < 400; v++) {
    if (g.v[v].stmt < 0 || g.s[g.v[v].stmt].dead)
      continue;
    rg_graph h = copy_graph(&g);
    h.outs[0] = v, h.nouts = 1;
    if (keep(c, &g, &h, cls, &last, &tries))
      break;
  }
  for (bool changed = true; changed && tries < 400;) {
    changed = false;
    for (int s = g.ns - 1; s >= 0 && tries < 400; s--) { /* cut: the results become inputs */
      if (!rg_stmt_live(&g, s))
        continue;
      rg_graph h = copy_graph(&g);
      rg_cut(&h, s);
      if (rg_live_stmts(&h) == 0 || rg_live_stmts(&h) == rg_live_stmts(&g)) {
        rg_free(&h);
        continue;
      }
      changed |= keep(c, &g, &h, cls, &last, &tries);
    }
    for (int s = g.ns - 1; s >= 0 && tries < 400; s--) { /* bypass: an operand of the same type instead */
      const rg_stmt *st = &g.s[s];
      if (!rg_stmt_live(&g, s) || st->nres != 1)
        continue;
      for (const char *p = strchr(st->text, '@'); p && tries < 400; p = strchr(p + 1, '@')) {
        int o = atoi(p + 1);
        if (!rg_same_type(&g, o, st->first))
          continue;
        rg_graph h = copy_graph(&g);
        rg_replace(&h, st->first, o);
        if (rg_live_stmts(&h) == 0) {
          rg_free(&h);
          continue;
        }
        if (keep(c, &g, &h, cls, &last, &tries)) {
          changed = true;
          break;
        }
      }
    }
    for (int k = g.nouts - 1; k >= 0 && g.nouts > 1 && tries < 400; k--) {
      rg_graph h = copy_graph(&g);
      rg_drop_output(&h, k);
      changed |= keep(c, &g, &h, cls, &last, &tries);
    }
  }
  coil_strbuf b = {0};
  rg_print(&g, &b, true);
  fprintf(out,
          "\nrandom: graph seed %llu fails (%s): %s\n"
          "  replay: coil-conformance --plugin %s --tier random --seed %llu --count %d --batch %d\n"
          "  shrunk from %d to %d statements in %d attempts; the smallest graph that fails the same way:\n%s\n",
          (unsigned long long)seed, cls, last.msg, c->plugin, (unsigned long long)seed, c->random_batch,
          c->random_batch, before, rg_live_stmts(&g),
          tries, b.s);
  fflush(out);
  coil_strbuf_free(&b);
  rg_free(&g);
}

void
conf_tier_random(conf_ctx *c)
{
  if (!conf_selected(c, "random", "graph", "-", "-"))
    return;
  double t0 = now();
  long done = 0, pass = 0, fail = 0, rejected = 0, unsupported = 0, skipped = 0;
  int shrunk = 0;
  conf_result *res = malloc(sizeof *res * BATCH);
  if (!res)
    abort();
  char first_reject[480] = "";
  while (c->random_time_s > 0 ? now() - t0 < c->random_time_s : done < c->random_count) {
    int per = c->random_batch, n = BATCH;
    if (c->random_time_s <= 0 && (c->random_count - done + per - 1) / per < n)
      n = (int)((c->random_count - done + per - 1) / per);
    batch b = {c->random_seed + (uint64_t)done, per, NULL};
    for (int i = 0; i < n; i++) {
      memset(&res[i], 0, sizeof res[i]);
      snprintf(res[i].tier, sizeof res[i].tier, "random");
      snprintf(res[i].name, sizeof res[i].name, "seed %llu", (unsigned long long)(b.seed0 + (uint64_t)(i * per)));
      snprintf(res[i].dtype, sizeof res[i].dtype, "-");
      snprintf(res[i].shape, sizeof res[i].shape, "-");
    }
    conf_ctx batch_ctx = *c;
    batch_ctx.results = NULL, batch_ctx.errs = NULL, batch_ctx.nresults = batch_ctx.cap = 0;
    if (c->list_only) {
      conf_run_cases(&batch_ctx, n, run_case, &b, res);
      conf_results_free(&batch_ctx);
      done += (long)n * per;
      continue;
    }
    conf_run_cases(&batch_ctx, n, run_case, &b, res);
    conf_results_free(&batch_ctx);
    for (int i = 0; i < n; i++) {
      conf_result *r = &res[i];
      if (r->status == CONF_PASS)
        pass++;
      else if (r->status == CONF_UNSUPPORTED)
        unsupported++;
      else if (r->status == CONF_SKIP && strstr(r->msg, "rejected by the checker")) {
        rejected++;
        if (!first_reject[0])
          snprintf(first_reject, sizeof first_reject, "%s: %.400s", r->name, r->msg);
        if (c->verbose)
          fprintf(stderr, "random/%s: %s\n", r->name, r->msg);
      } else if (r->status == CONF_SKIP)
        skipped++;
      else {
        fail++;
        conf_record(c, r);
        if (shrunk < SHRINK_MAX) {
          shrunk++;
          shrink(c, b.seed0 + (uint64_t)(i * per), r, stdout);
        }
      }
    }
    done += (long)n * per;
    if (c->random_time_s > 0)
      fprintf(stderr, "coil-conformance: random tier: %ld graphs, %ld failed, %.0f s\n", done, fail, now() - t0);
  }
  free(res);
  if (c->list_only)
    return;
  conf_result s = {.tier = "random", .name = "graphs", .dtype = "-", .shape = "-", .nmse = -1};
  s.status = fail ? CONF_FAIL : pass ? CONF_PASS : CONF_SKIP;
  s.seconds = now() - t0;
  snprintf(s.msg, sizeof s.msg,
           "%ld graphs from seed %llu: %ld pass, %ld FAIL, %ld not supported, %ld skipped, %ld rejected by the "
           "checker%s%.200s",
           done, (unsigned long long)c->random_seed, pass, fail, unsupported, skipped, rejected,
           rejected ? " (first: " : "", rejected ? first_reject : "");
  if (rejected)
    strncat(s.msg, ")", sizeof s.msg - strlen(s.msg) - 1);
  conf_record(c, &s);
  fprintf(stderr, "coil-conformance: random tier: %s\n", s.msg);
}

/* --print-case with --tier random: the graph of --seed, as the tier runs it. */
void
conf_print_random(const conf_ctx *c, FILE *f)
{
  rg_graph g;
  make(c->random_seed, c->random_batch, &g);
  coil_strbuf b = {0};
  rg_print(&g, &b, true);
  fputs(b.s, f);
  coil_strbuf_free(&b);
  rg_free(&g);
}
