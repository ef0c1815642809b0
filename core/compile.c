/* compile.c — the pipeline, top to bottom in one function (coil_compile_graph): lower the
 * graph to loop IR, schedule (dead code, fusion, order), emit the Wrapper IR with its memory
 * plan, verify it. With a dump directory it writes what each stage saw, like Inductor's
 * TORCH_COMPILE_DEBUG: graph.txt, attention.txt (the attention chains found, attention.c),
 * ir_pre_fusion.txt, ir_post_fusion.txt, program.wir. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attention.h"
#include "backend.h"
#include "runtime.h"
#include "schedule.h"

/* Writes text to DIR/NAME (through a temporary file and a rename). */
static int
dump(const char *dir, const char *name, const char *text, coil_diag *d)
{
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return coil_diag_set(d, "%s: the dump directory's name is too long", dir);
  return coil_write_text_file(path, text, d);
}

static coil_wir_program *
compile(const coil_graph *g, const coil_compile_options *o, coil_diag *d)
{
  if (o->dump_dir && mkdir(o->dump_dir, 0777) != 0 && errno != EEXIST) {
    coil_diag_set(d, "%s: cannot create the dump directory: %s", o->dump_dir, strerror(errno));
    return NULL;
  }
  coil_wir_program *p = coil_wir_new(g->name);
  coil_arena *scratch = coil_arena_new();
  lowering L;
  schedule S = {0};
  coil_strbuf pre = {0}, post = {0};
  /* lowering's dimension variables live in a scratch context; only size symbols and loop
   * variables reach the program's */
  bool ok = coil_lower(&L, g, o, coil_symctx_new(scratch), scratch, d) == 0 &&
            coil_sched_build(&S, &L, o->fuse, d) == 0;
  if (ok && o->dump_dir) {
    coil_sched_dump(&S, false, &pre);
    coil_sched_dump(&S, true, &post);
    char *text = coil_graph_print(g);
    coil_strbuf at = {0};
    coil_attention_dump(g, o, &at);
    ok = dump(o->dump_dir, "graph.txt", text, d) == 0 &&
         dump(o->dump_dir, "attention.txt", at.s ? at.s : "", d) == 0 &&
         dump(o->dump_dir, "ir_pre_fusion.txt", pre.s ? pre.s : "", d) == 0 &&
         dump(o->dump_dir, "ir_post_fusion.txt", post.s ? post.s : "", d) == 0;
    coil_xfree(text);
    coil_strbuf_free(&at);
  }
  ok = ok && coil_emit_program(&S, p, d) == 0;
  if (ok && o->dump_dir) {
    char *text = coil_wir_print(p);
    ok = dump(o->dump_dir, "program.wir", text, d) == 0;
    coil_xfree(text);
  }
  if (ok && o->verify && coil_wir_verify(p, d) != 0) {
    char msg[sizeof d->msg];
    snprintf(msg, sizeof msg, "%s", d->msg);
    d->msg[0] = 0;
    coil_diag_set(d, "internal: the Wrapper IR of %s does not verify: %s", g->name, msg);
    ok = false;
  }
  if (S.L)
    coil_sched_free(&S);
  coil_strbuf_free(&pre);
  coil_strbuf_free(&post);
  coil_arena_free(scratch);
  if (!ok) {
    coil_wir_free(p);
    return NULL;
  }
  return p;
}

/* Whether the plugin of o refuses, through its statement query, a coil.attention call of p
 * (the claim by dtype said yes, the shapes or layouts say no). */
static bool
attention_refused(const coil_compile_options *o, const coil_wir_program *p)
{
  if (!o->plugin || !o->plugin->api.supports_stmt)
    return false;
  for (int i = 0; i < p->nlines; i++) {
    const coil_line *l = &p->lines[i];
    if (l->kind == COIL_LINE_EXTERN_CALL && strcmp(l->op, "coil.attention") == 0 &&
        !coil_claim_stmt(o->plugin, o->instance, p, l))
      return true;
  }
  return false;
}

/* The compile inside an out-of-memory scope (arena.h): running out of memory anywhere in it
 * frees what the compile allocated and fails with a message, instead of ending the process. */
coil_wir_program *
coil_compile_graph(const coil_graph *g, const coil_compile_options *o, coil_diag *d)
{
  static const coil_compile_options dflt = {.fuse = true, .verify = true};
  coil_oom_scope oom;
  if (!COIL_OOM_TRY(&oom)) {
    d->msg[0] = 0; /* whatever was said before memory ran out */
    coil_diag_set(d, "out of memory compiling graph %s (a request of %zu bytes failed)", g->name,
                  oom.failed_bytes);
    return NULL;
  }
  coil_wir_program *p = compile(g, o ? o : &dflt, d);
  if (p && o && attention_refused(o, p)) { /* again, with the attention chains as written */
    coil_library_claim *kept = coil_xcalloc((size_t)o->nlibrary + 1, sizeof *kept);
    coil_compile_options again = *o;
    again.nlibrary = 0;
    for (int i = 0; i < o->nlibrary; i++)
      if (strcmp(o->library[i].op, "coil.attention") != 0)
        kept[again.nlibrary++] = o->library[i];
    again.library = kept;
    coil_wir_free(p);
    p = compile(g, &again, d);
    coil_xfree(kept);
  }
  coil_oom_end(&oom);
  return p;
}
