/* coil — the command-line tool: check a graph, run it on a backend, summarise the outputs.
 *
 *   coil check GRAPH
 *   coil run GRAPH|ARTIFACT [--backend ref] [--weights W] [--inputs I] [--out O] [--seed N]
 *                  [--size SYM=N] [--expect E [--rtol R] [--atol A]] [--no-cache]
 *   coil compile GRAPH [--backend NAME -o DIR [--embed-weights W]]
 *   coil --version | help
 *
 * Exit status: 0 success, 1 a graph, data or comparison error, 2 a usage error. This is the
 * only place in coil that exits. */
#include <errno.h>
#include <sys/stat.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coil/coil.h"
#include "artifact.h"
#include "backend.h"
#include "bench.h"
#include "cache.h"
#include "config.h"
#include "graph.h"
#include "ops.h"
#include "coil/sym.h"

static const char usage[] =
    "usage: coil <command> [options]\n"
    "\n"
    "commands:\n"
    "  check GRAPH             parse and type-check GRAPH; print it with every type filled in\n"
    "  run GRAPH [options]     run GRAPH and summarise its outputs\n"
    "  run ARTIFACT [options]  run an artifact directory (written by compile --backend -o)\n"
    "                          without the graph and without compiling\n"
    "  compile GRAPH [--dump DIR] [--no-fuse] [-o FILE]\n"
    "                          compile GRAPH to a Wrapper IR program; print a summary (--dump:\n"
    "                          graph.txt, ir_pre_fusion.txt, ir_post_fusion.txt, program.wir;\n"
    "                          -o: the program's text to FILE, - for stdout)\n"
    "  compile GRAPH --backend NAME [-v] [--no-cache]\n"
    "                          compile GRAPH with plugin NAME into the compile cache (and publish\n"
    "                          it to [cache] remote): say whether it was there, locally or\n"
    "                          remotely; -v: the local and remote cache's counts and times\n"
    "  compile GRAPH --backend NAME -o DIR [--embed-weights W]\n"
    "                          compile GRAPH with plugin NAME into the artifact directory DIR\n"
    "                          (replacing an artifact there); --embed-weights stores the params\n"
    "                          of safetensors file W in it\n"
    "  compile GRAPH --backend A,B [--dump DIR]\n"
    "                          print how GRAPH splits across plugins A, B, ... (partial offload;\n"
    "                          --dump: partition.txt with each part's program)\n"
    "  config explain [--config FILE] [--mode M] [--backend B]\n"
    "                          every option, its value and where it came from\n"
    "  ops [--markdown]        list the op table (--markdown: the text of docs/ops.md)\n"
    "  plugins [--config FILE] list the backend plugins on the search path\n"
    "  cache stats | clear | prune --max-size N[K|M|G] [--config FILE]\n"
    "                          the local compile cache ([coil] cache_dir): what it holds; remove\n"
    "                          every entry; remove the least recently used until N is left\n"
    "                          (entries a running process has open are kept)\n"
    "  bench [--only NAME[,NAME...]]\n"
    "                          the cpu plugin on the CPU benchmark graphs (docs/benchmarks.md):\n"
    "                          compile times and kernel times, codegen = cc beside llvm\n"
    "  bench --backend cuda [--compile-only] [--autotune] [--json FILE] [--only NAME]\n"
    "        [--convolution auto|generated|library] [--attention auto|generated|library]\n"
    "        [--matmul auto|generated|library] [--decompose-k auto|off|N]\n"
    "                          the cuda plugin on the GPU benchmark graphs: kernel time, GB/s,\n"
    "                          host time per call, with CUDA graphs, compile times\n"
    "  bench --conv [--rounds N] [--threads T]\n"
    "                          the cpu plugin's convolution: generated kernel against its library\n"
    "                          call (im2col + OpenBLAS) on ResNet 3x3 layers, same run\n"
    "  bench --core-only [--nodes N]\n"
    "                          time parse + compile on generated graphs up to N statements\n"
    "  help                    show this text\n"
    "  --version               print the version\n"
    "\n"
    "run options:\n"
    "  --backend NAME          ref (the reference interpreter), interp, or any plugin name or\n"
    "                          path (default: [coil] backend, see 'coil config explain'); a list\n"
    "                          A,B splits the graph: each statement on the first that claims it\n"
    "  --config FILE           the ini file (default: $COIL_CONFIG, else ./coil.ini)\n"
    "  --dump DIR              write the compile stages' dumps to DIR (plugin backends)\n"
    "  --no-cache              compile even when the compile cache ([coil] cache_dir) has the\n"
    "                          artifact, and do not store it there\n"
    "  -v                      say what the compile cache (local and [cache] remote) did\n"
    "  --weights FILE          safetensors file with the graph's param and buffer inputs\n"
    "  --inputs FILE           safetensors file with the graph's other inputs, by name\n"
    "  --out FILE              write the outputs (out0, out1, ...) to a safetensors file\n"
    "  --seed N                seed for inputs that are not given (default 0)\n"
    "  --size SYM=N            size of symbol SYM for generated inputs (default 8)\n"
    "  --expect FILE           compare the outputs with FILE (out0, out1, ...); exit 1 on mismatch\n"
    "  --rtol R, --atol A      tolerances for --expect: |got-want| <= atol + rtol*|want|\n"
    "                          (defaults by dtype: f64 1e-7/1e-7, f32 1.3e-6/1e-5, f16 1e-3/1e-5,\n"
    "                          bf16 1.6e-2/1e-5: torch.testing.assert_close; integers and\n"
    "                          bools must match exactly)\n"
    "\n"
    "Inputs not given in --inputs or --weights are generated from --seed: floating-point\n"
    "values from a standard normal distribution, integers uniform in [0, 10), bools fair.\n"
    "An artifact's embedded weights are used for the params --weights does not give; it runs\n"
    "only on the plugin and version that compiled it, and every file of it is checked first.\n";

static int
fail(const coil_diag *d)
{
  fprintf(stderr, "%s\n", d->msg);
  return 1;
}

static int
usage_error(const char *fmt, const char *arg)
{
  fprintf(stderr, "coil: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run 'coil help' for usage)\n");
  return 2;
}

static int
cmd_check(int argc, char **argv)
{
  if (argc != 1)
    return usage_error("check takes exactly one graph file%s", "");
  coil_diag d = {0};
  coil_graph *g = coil_graph_load(argv[0], &d);
  if (!g)
    return fail(&d);
  char *text = coil_graph_print(g);
  fputs(text, stdout);
  free(text);
  coil_graph_free(g);
  return 0;
}

static const char *builtin_plugin_dir(void);

static double
now_seconds(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* What running on a backend needs: the effective configuration and the plugin's options. */
typedef struct backend_setup {
  coil_config *config;
  coil_backend_env env;
  const char *name;           /* the backend to run on (maybe a list: "template,cpu") */
  const char **keys, **values; /* the plugin's options without `library` */
  coil_backend_opts list[COIL_BACKEND_MAX_LIST]; /* a list's backends and their options */
  char list_names[COIL_BACKEND_MAX_LIST][80];
  coil_cache_remote remote;   /* [cache] remote */
} backend_setup;
static int setup_backend(backend_setup *b, const char *flag_backend, const char *config_file, coil_diag *d);
static void backend_teardown(backend_setup *b);
static int open_backend(const backend_setup *bs, coil_loaded_plugin **lp, coil_plugin **inst, coil_diag *d);
static int plugin_compile(const backend_setup *bs, const coil_loaded_plugin *lp, coil_plugin *inst,
                          const coil_wir_program *p, const char *dump_dir, coil_diag *d);
static int cached_compile(const backend_setup *bs, const coil_loaded_plugin *lp, coil_plugin *inst,
                          const coil_wir_program *p, bool verbose, coil_diag *d);
static int artifact_compile(const backend_setup *bs, const coil_loaded_plugin *lp, coil_plugin *inst,
                            const coil_graph *g, const coil_wir_program *p, const char *dir,
                            const char *weights, coil_diag *d);

/* coil compile --backend a,b: the partition of the graph across the list, printed (and with
 * --dump, written there with each part's program). No artifact: one holds one plugin's code. */
static int
compile_split(const char *graph, const char *backend, const char *dump_dir, const char *out)
{
  if (out)
    return usage_error("-o writes one plugin's artifact; a list of backends (%s) is for coil run "
                       "and for --dump", backend);
  coil_diag d = {0};
  backend_setup bs;
  if (setup_backend(&bs, backend, NULL, &d)) {
    backend_teardown(&bs);
    return fail(&d);
  }
  if (dump_dir)
    bs.env.dump_dir = dump_dir;
  coil_graph *g = coil_graph_load(graph, &d);
  char *plan = NULL;
  int rc = !g || coil_backend_run_split(g, bs.name, &bs.env, NULL, NULL, &plan, &d);
  if (rc) {
    fail(&d);
  } else {
    /* the plan without the parts' programs (those are in the dump) */
    char *cut = strstr(plan, "\n# ---- part ");
    printf("%.*s", cut ? (int)(cut - plan + 1) : (int)strlen(plan), plan);
    if (bs.env.dump_dir)
      printf("dumps in %s/: partition.txt (the plan and each part's program)\n", bs.env.dump_dir);
  }
  free(plan);
  coil_graph_free(g);
  backend_teardown(&bs);
  return rc;
}

static int
cmd_compile(int argc, char **argv)
{
  const char *graph = NULL, *dump_dir = NULL, *out = NULL, *backend = NULL, *embed = NULL;
  bool fuse = true, verbose = false, no_cache = false;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--no-fuse") == 0)
      fuse = false;
    else if (strcmp(argv[i], "-v") == 0)
      verbose = true;
    else if (strcmp(argv[i], "--no-cache") == 0)
      no_cache = true;
    else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
      backend = argv[++i];
    else if (strcmp(argv[i], "--embed-weights") == 0 && i + 1 < argc)
      embed = argv[++i];
    else if ((strcmp(argv[i], "--dump") == 0 || strcmp(argv[i], "-o") == 0) && i + 1 < argc)
      *(argv[i][1] == 'o' ? &out : &dump_dir) = argv[i + 1], i++;
    else if (argv[i][0] == '-' && argv[i][1])
      return usage_error("unknown option '%s' for compile (or a missing value)", argv[i]);
    else if (graph)
      return usage_error("compile takes one graph file; unexpected '%s'", argv[i]);
    else
      graph = argv[i];
  }
  if (!graph)
    return usage_error("compile needs a graph file%s", "");
  /* -o with a plugin backend writes an artifact directory; otherwise the program's text. */
  bool artifact = out && backend && strcmp(backend, "ref") != 0;
  if (artifact && strcmp(out, "-") == 0)
    return usage_error("an artifact is a directory, not stdout (-o - writes the program text, "
                       "without --backend)%s", "");
  if (embed && !artifact)
    return usage_error("--embed-weights needs --backend NAME and -o DIR%s", "");
  if (backend && strchr(backend, ','))
    return compile_split(graph, backend, dump_dir, out);
  coil_diag d = {0};
  /* the program is compiled for the plugin named, if any: what it claims as library calls
   * (and [coil] convolution) decides what the core generates */
  bool plugin = backend && strcmp(backend, "ref") != 0;
  backend_setup bs;
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
  if (setup_backend(&bs, plugin ? backend : "ref", NULL, &d) || (plugin && open_backend(&bs, &lp, &inst, &d))) {
    if (inst)
      coil_plugin_destroy(lp, inst);
    coil_plugin_close(lp);
    backend_teardown(&bs);
    return fail(&d);
  }
  double t0 = now_seconds();
  coil_graph *g = coil_graph_load(graph, &d);
  double t1 = now_seconds();
  coil_library_claim claims[COIL_BACKEND_MAX_CLAIMS];
  if (!dump_dir)
    dump_dir = bs.env.dump_dir; /* [coil] debug_dump, COIL_DEBUG_DUMP */
  coil_compile_options o = {.fuse = fuse, .verify = true, .dump_dir = dump_dir};
  coil_backend_compile_options(lp, inst, bs.env.convolution, bs.env.attention, bs.env.matmul, claims, &o);
  o.decompose_k = coil_backend_decompose_k(bs.env.decompose_k);
  coil_wir_program *p = g ? coil_compile_graph(g, &o, &d) : NULL;
  double t2 = now_seconds();
  if (!p) {
    coil_graph_free(g);
    if (inst)
      coil_plugin_destroy(lp, inst);
    coil_plugin_close(lp);
    backend_teardown(&bs);
    return fail(&d);
  }
  int kernels = 0, externs = 0;
  for (int i = 0; i < p->nlines; i++) {
    kernels += p->lines[i].kind == COIL_LINE_KERNEL_CALL;
    externs += p->lines[i].kind == COIL_LINE_EXTERN_CALL;
  }
  int rc = 0;
  if (out && !artifact) {
    char *text = coil_wir_print(p);
    if (strcmp(out, "-") == 0) {
      fputs(text, stdout);
    } else {
      coil_diag wd = {0};
      if (coil_write_text_file(out, text, &wd) != 0) {
        fprintf(stderr, "coil: %s\n", wd.msg);
        rc = 1;
      }
    }
    free(text);
  }
  if (!out || strcmp(out, "-") != 0) {
    printf("graph %s: %d statements -> %d kernel%s, %d library call%s\n", g->name, g->nnodes, kernels,
           kernels == 1 ? "" : "s", externs, externs == 1 ? "" : "s");
    for (int k = 0; k < p->nkernels; k++)
      printf("  %s  (%s)\n", p->kernels[k].name, p->kernels[k].source_ops ? p->kernels[k].source_ops : "");
    if (p->peak_bytes >= 0)
      printf("peak memory of intermediates and outputs: %lld bytes\n", (long long)p->peak_bytes);
    printf("parse %.3f ms, compile %.3f ms\n", 1e3 * (t1 - t0), 1e3 * (t2 - t1));
    if (dump_dir)
      printf("dumps in %s/: graph.txt attention.txt ir_pre_fusion.txt ir_post_fusion.txt program.wir\n", dump_dir);
  }
  int plugin_rc = 0;
  /* without -o or --dump the compile goes through the compile cache, as coil run's does: it
   * fills the local cache and, with [cache] remote, the team's */
  bool cached = plugin && !artifact && !dump_dir && !no_cache && bs.env.cache_dir && *bs.env.cache_dir;
  if (cached && coil_cache_prepare(bs.env.cache_dir, &d)) {
    fprintf(stderr, "note: compiling without the cache: %s\n", d.msg);
    d.msg[0] = 0;
    cached = false;
  }
  if (rc == 0 && artifact)
    plugin_rc = artifact_compile(&bs, lp, inst, g, p, out, embed, &d);
  else if (rc == 0 && cached)
    plugin_rc = cached_compile(&bs, lp, inst, p, verbose, &d);
  else if (rc == 0 && plugin)
    plugin_rc = plugin_compile(&bs, lp, inst, p, dump_dir, &d);
  if (plugin_rc) {
    fprintf(stderr, "%s\n", d.msg);
    rc = 1;
  }
  if (inst)
    coil_plugin_destroy(lp, inst);
  coil_plugin_close(lp);
  backend_teardown(&bs);
  coil_wir_free(p);
  coil_graph_free(g);
  return rc;
}

/* What the compiler core makes of an op (core/lower_ops.c). */
static const char *
lowers_to(const coil_op *op)
{
  switch (op->rule) {
  case COIL_RULE_REDUCE: case COIL_RULE_ARG: case COIL_RULE_MINMAX_DIM: return "reduction";
  case COIL_RULE_VAR: return "welford_mean and welford_m2 reductions (one pass)";
  case COIL_RULE_SOFTMAX: return "max and sum reductions + pointwise";
  case COIL_RULE_LAYER_NORM: return "welford_mean and welford_m2 reductions + pointwise epilogue";
  case COIL_RULE_BATCH_NORM: return "pointwise";
  case COIL_RULE_RESHAPE: case COIL_RULE_PERMUTE: case COIL_RULE_TRANSPOSE: case COIL_RULE_EXPAND:
  case COIL_RULE_SLICE: case COIL_RULE_SELECT: case COIL_RULE_SQUEEZE: case COIL_RULE_UNSQUEEZE:
    return "index function (no data)";
  case COIL_RULE_CLONE: case COIL_RULE_COPY: case COIL_RULE_TO_COPY: return "pointwise (a copy)";
  case COIL_RULE_CAT: case COIL_RULE_PAD: return "pointwise (selects, clamped loads)";
  case COIL_RULE_SPLIT: return "index functions (no data)";
  case COIL_RULE_MATMUL: return op->sub == 2 ? "library mm + pointwise epilogue" : "library call";
  case COIL_RULE_POOL: return "reduction over each output's window";
  case COIL_RULE_CONV: return "reduction + pointwise epilogue, or a library call the plugin claims";
  case COIL_RULE_INDEX: return "pointwise with indirect loads (a bool mask: library call)";
  case COIL_RULE_GATHER: case COIL_RULE_EMBEDDING: return "pointwise with indirect loads";
  case COIL_RULE_SCATTER: case COIL_RULE_INDEX_PUT: case COIL_RULE_EMBEDDING_BWD:
    return "copy + scatter kernel (indirect stores; duplicates combine atomically where the op combines them)";
  case COIL_RULE_SELECT_SCATTER: case COIL_RULE_SLICE_SCATTER: return "pointwise (a select between src and self)";
  case COIL_RULE_MASKED_SCATTER: return "prefix count of the mask (a reduction), then pointwise with an indirect load";
  case COIL_RULE_TOPK:
    return "as sort, first k positions (rows up to 1024; longer rows with k <= 512 by chunks of 1024), or a library call "
           "the plugin claims";
  case COIL_RULE_CUMSUM:
    return op->sub == 1 ? "scan prod kernel (any length)" : "scan sum kernel (any length), or a library call the plugin claims";
  case COIL_RULE_POOL_BWD: return "reduction over the windows covering each input element (a gather)";
  case COIL_RULE_NORM_BWD: return "sum reductions + pointwise (decomposed)";
  case COIL_RULE_CONV_BWD: return "three reductions (gathers): grad_input, grad_weight, grad_bias";
  case COIL_RULE_COL2IM: return "reduction over the blocks covering each pixel (a gather)";
  case COIL_RULE_SORT: return "two O(n^2) sum reductions (rank, position) + indirect load (rows up to 1024)";
  case COIL_RULE_CDIST: return op->sub == 1 ? "sum reduction (row of each pair) + reduction with indirect loads"
                                            : "reduction over the features";
  case COIL_RULE_GRID_SAMPLE: return "pointwise with masked indirect loads";
  case COIL_RULE_EMBEDDING_BAG: return "masked reductions over the indices with indirect loads";
  case COIL_RULE_ASSERT_META: return "nothing (checked at compile time)";
  case COIL_RULE_GETITEM: return "nothing (selects a tuple element)";
  case COIL_RULE_FLIP: case COIL_RULE_REPEAT: case COIL_RULE_DIAGONAL: case COIL_RULE_AS_STRIDED:
    return "index function (no data)";
  case COIL_RULE_MODE_PAD: return "index function (reflected or clamped, no data)";
  case COIL_RULE_INDEX_SELECT: return "pointwise with indirect loads";
  case COIL_RULE_EMPTY: return "pointwise (zeros)";
  case COIL_RULE_UPSAMPLE:
    return op->sub ? "pointwise: 4 indirect loads, f32 index arithmetic" : "pointwise (indirect loads where the index needs f32 arithmetic)";
  case COIL_RULE_GROUP_NORM: case COIL_RULE_BATCH_NORM_STATS:
    return "welford_mean and welford_m2 reductions + pointwise epilogue (evaluation: pointwise)";
  case COIL_RULE_DROPOUT: return "pointwise (a copy and a constant mask; random cases refused)";
  case COIL_RULE_ADAPTIVE_POOL: return "reduction over each output's window";
  case COIL_RULE_SYM_SIZE: return "pointwise (the size, an index expression)";
  default: return op->kind == COIL_OPK_COMPOSITE ? "pointwise (decomposed)" : "pointwise";
  }
}

/* What coil chooses where PyTorch leaves a choice or has state, for the ops of ops.def's
 * section "shapes, padding, resampling, normalisation and pooling". */
static const char shape_notes[] =
    "Where PyTorch leaves a choice, keeps state or draws random numbers, coil decides so:\n\n"
    "- `aten.empty.memory_format`, `aten.empty_strided.default`: filled with zeros (PyTorch\n"
    "  leaves the memory uninitialised). empty_strided's strides must be one per size and not\n"
    "  negative, and say nothing more: coil's buffers are dense row-major whatever they say.\n"
    "- `aten.as_strided.default` reads its input's elements in row-major order: the storage\n"
    "  PyTorch gives a contiguous tensor (PyTorch reads a non-contiguous input's own storage,\n"
    "  which a coil value does not have). Any strides, overlapping or 0, are an index\n"
    "  expression over that buffer (a gather, no copy unless a consumer needs one); negative\n"
    "  strides are refused as PyTorch refuses them, and the last element read must lie inside\n"
    "  the input (checked at compile time, so the input's size must be constant).\n"
    "- `aten._native_batch_norm_legit.default` (training) normalises with the batch's\n"
    "  statistics; PyTorch also updates running_mean and running_var in place. coil's graphs\n"
    "  are functional: it reads them (evaluation) and never writes them, and the updated\n"
    "  statistics are not an output. save_mean and save_invstd (and native_group_norm's mean\n"
    "  and rstd) have the input's dtype, as PyTorch's CPU kernels return them.\n"
    "- `aten.native_dropout.default` runs where it needs no random numbers: evaluation\n"
    "  (train=False) and p = 0 return the input and a mask of True; training with p = 1\n"
    "  returns input * 0 * 0 (NaN where the input is inf or NaN, as PyTorch's CPU kernel) and a\n"
    "  mask of False. Training with 0 < p < 1 is refused by type inference: coil's graphs are\n"
    "  deterministic and have no random number generator (export in eval mode).\n"
    "- `aten.upsample_nearest2d.vec`, `aten.upsample_bilinear2d.vec` follow PyTorch's CPU\n"
    "  kernels: the source index is computed in f32 (f64 for f64 bilinear) from 1/scale_factor\n"
    "  when scale factors are given, from in/out when output_size is; nearest copies where\n"
    "  out == in and halves the index where out == 2*in whatever the scale (PyTorch's CUDA\n"
    "  kernel uses the scale there, so it differs, e.g. for scale 2.05 on 10 rows). Spatial\n"
    "  sizes must be constant.\n"
    "- `aten.reflection_pad*`, `aten.replication_pad*`, the adaptive pools: the padded or\n"
    "  pooled dims must have constant sizes (their checks, padding < size, need them).\n"
    "- `aten.sym_size.int`, `aten.sym_numel.default` return the size as a 0-d i64 tensor\n"
    "  (PyTorch: a SymInt; coil has no integer values outside tensors), symbolic sizes bound\n"
    "  when the graph runs; with a tensor of one or more dimensions it promotes as PyTorch's\n"
    "  Python int does. The exporter (tools/export) already folds size computations: a statement whose\n"
    "  value is a SymInt (sym_size, arithmetic on sizes) is not written, its uses in view and\n"
    "  expand size lists become -1 and other uses are reported unsupported; so these two only\n"
    "  appear in hand-written graphs. `aten.sym_stride.int` and\n"
    "  `aten.sym_storage_offset.default` are left out: a coil value has no strides or storage\n"
    "  offset of its own (PyTorch's describe its views), so any answer could be wrong.\n"
    "  `aten._local_scalar_dense.default` (x.item()) is left out: its result is a Python number\n"
    "  whose value depends on the data, which the format cannot hold, and as a 0-d tensor it\n"
    "  would promote differently (an f64 0-d tensor keeps f64 where a Python float is f32).\n"
    "- Also left out of PyTorch's Core ATen opset (docs/core-aten.md): `aten._fft_r2c.default`\n"
    "  and `aten._fft_c2r.default` (complex tensors: coil has no complex dtypes),\n"
    "  `aten.nonzero.default` (its size depends on the data: coil knows every size before a\n"
    "  run), and `aten.rand.default`, `aten.randn.default`, `aten.randperm.default` (random\n"
    "  numbers: graphs hold no generator state, and values from another generator than\n"
    "  PyTorch's could be checked against nothing).\n\n";

static int
cmd_ops(int argc, char **argv)
{
  bool md = argc == 1 && strcmp(argv[0], "--markdown") == 0;
  if (argc > 1 || (argc == 1 && !md))
    return usage_error("ops takes only --markdown%s", "");
  if (!md) {
    for (int i = 0; i < COIL_OP_COUNT; i++) {
      const coil_op *op = coil_op_get((coil_op_id)i);
      printf("%-52s %-10s (%s)\n", op->name, coil_op_kind_name(op->kind), op->schema);
    }
    return 0;
  }
  printf("# The op table\n\n"
         "Generated by `coil ops --markdown` from `core/ops.def`; a test keeps this file equal to\n"
         "that output. Every op here parses, type-checks (dtype promotion and symbolic shapes)\n"
         "and runs on `ref`, the reference interpreter. *Kind* says what later stages do with\n"
         "it: pointwise and reduction ops become loops, views only change the index function,\n"
         "move ops copy data, extern ops are library calls, composite ops are decomposed,\n"
         "noop ops check or select and compute nothing.\n\n"
         "*Lowers to* is what the compiler core makes of it in the Wrapper IR: pointwise work and\n"
         "reductions become kernels (fused with their neighbours), views only index functions,\n"
         "library calls extern_call lines. Every op runs on the interp plugin, which executes\n"
         "every kernel op and every library call listed.\n\n"
         "Convolution (1-D to 3-D, grouped, depthwise, strided, padded, dilated, transposed) is a\n"
         "generated kernel, a sum reduction with bias and what follows fused into its epilogue,\n"
         "unless the target plugin claims `aten.convolution.default` as a library call (`cpu`\n"
         "does: im2col + OpenBLAS); `[coil] convolution` overrides the choice (docs/config.md).\n\n"
         "Graphs are functional, so an `.out` overload (`aten.atan2.out`) returns its result as a\n"
         "new value and does not write `out`, which must already have the result's dtype and sizes\n"
         "(an error names the statement otherwise: coil neither resizes nor casts it). Integer\n"
         "`fmod` and `remainder` by zero stop `ref` and the interp plugin with an error (PyTorch\n"
         "raises ZeroDivisionError on the CPU); code generated by the cpu and cuda plugins gives 0.\n\n"
         "%s", shape_notes);
  printf("%d ops.\n\n"
         "| op | kind | schema | ref | lowers to |\n|---|---|---|---|---|\n",
         (int)COIL_OP_COUNT);
  for (int i = 0; i < COIL_OP_COUNT; i++) {
    const coil_op *op = coil_op_get((coil_op_id)i);
    printf("| `%s` | %s | `%s` | yes | %s |\n", op->name, coil_op_kind_name(op->kind), op->schema,
           lowers_to(op));
  }
  return 0;
}

/* splitmix64: a small, well-mixed generator, so generated inputs are the same everywhere. */
static uint64_t
next_random(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double
uniform01(uint64_t *s)
{
  return ((double)(next_random(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static void
fill_random(coil_tensor *t, uint64_t *s)
{
  int64_t n = coil_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    if (coil_dtype_is_float(t->dtype)) {
      double u1 = uniform01(s), u2 = uniform01(s); /* Box-Muller */
      coil_tensor_set_f64(t, i, sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2));
    } else if (t->dtype == COIL_BOOL) {
      coil_tensor_set_i64(t, i, (int64_t)(next_random(s) & 1));
    } else {
      coil_tensor_set_i64(t, i, (int64_t)(next_random(s) % 10));
    }
  }
}

static int
parse_i64(const char *s, int64_t *out)
{
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end)
    return -1;
  *out = v;
  return 0;
}

/* What a run needs to know of its inputs and outputs, from a graph or from an artifact's
 * program (coil run GRAPH and coil run ARTIFACT share everything below). */
typedef struct run_input {
  const char *name;
  coil_dtype dtype;
  int rank;
  const coil_sym *const *dims;  /* rank sizes, in the signature's sym context */
  const char *weight;           /* NULL for a plain input, else "param" or "buffer" */
  const coil_tensor *embedded;  /* the artifact's embedded value, used when none is given */
} run_input;

typedef struct run_sig {
  const char *name;             /* the graph's */
  const coil_symctx *sym;
  int ninputs;
  run_input *inputs;            /* malloc'd */
  int noutputs;
  const char *const *output_names;
  bool *size_var;               /* [coil_sym_nvars]: a size symbol of the inputs (malloc'd) */
} run_sig;

static void
sig_finish(run_sig *s)
{
  int nsym = coil_sym_nvars(s->sym);
  s->size_var = calloc((size_t)nsym + 1, sizeof(bool));
  for (int i = 0; i < s->ninputs; i++)
    for (int k = 0; k < s->inputs[i].rank; k++)
      coil_sym_vars_used(s->inputs[i].dims[k], s->size_var, nsym);
}

static void
sig_from_graph(run_sig *s, const coil_graph *g, const char **names)
{
  *s = (run_sig){.name = g->name, .sym = g->sym, .ninputs = g->ninputs,
                 .inputs = calloc((size_t)g->ninputs + 1, sizeof(run_input)),
                 .noutputs = g->noutputs, .output_names = names};
  for (int i = 0; i < g->ninputs; i++) {
    const coil_value *v = g->inputs[i];
    s->inputs[i] = (run_input){v->name, v->type.dtype, v->type.rank, v->type.dims,
                               v->kind == COIL_VAL_PARAM    ? "param"
                               : v->kind == COIL_VAL_BUFFER ? "buffer"
                                                            : NULL, NULL};
  }
  for (int i = 0; i < g->noutputs; i++)
    names[i] = g->outputs[i]->name;
  sig_finish(s);
}

static void
sig_from_artifact(run_sig *s, const coil_stored_artifact *a)
{
  const coil_wir_program *p = a->program;
  *s = (run_sig){.name = a->graph, .sym = p->sym, .ninputs = p->ninputs,
                 .inputs = calloc((size_t)p->ninputs + 1, sizeof(run_input)),
                 .noutputs = a->noutputs, .output_names = (const char *const *)a->output_names};
  for (int i = 0; i < p->ninputs; i++) {
    const coil_buffer *b = &p->buffers[p->inputs[i].buffer];
    const char *label = p->inputs[i].label;
    s->inputs[i] = (run_input){label, b->dtype, b->rank, b->sizes,
                               p->inputs[i].is_param ? "param" : NULL,
                               p->inputs[i].is_param ? coil_tensor_list_find(&a->weights, label) : NULL};
  }
  sig_finish(s);
}

static void
sig_free(run_sig *s)
{
  free(s->inputs);
  free(s->size_var);
}

/* Binds every size symbol: from given inputs (or embedded weights) first, then --size, then the
 * default 8. */
static int
bind_sizes(const run_sig *sig, const coil_tensor_list *given, char **sizes, int nsizes,
           int64_t *bind, coil_diag *d)
{
  int nsym = coil_sym_nvars(sig->sym);
  bool *done = calloc((size_t)nsym + 1, sizeof(bool));
  for (int i = 0; i < sig->ninputs; i++) {
    const run_input *v = &sig->inputs[i];
    const coil_tensor *t = coil_tensor_list_find(given, v->name);
    t = t ? t : v->embedded;
    if (!t || t->rank != v->rank)
      continue;
    for (int k = 0; k < t->rank; k++) {
      const coil_sym *s = v->dims[k];
      if (s->kind == COIL_SYM_VAR && !done[s->var]) {
        bind[s->var] = t->shape[k];
        done[s->var] = true;
      }
    }
  }
  for (int i = 0; i < nsizes; i++) {
    char *eq = strchr(sizes[i], '=');
    int64_t v;
    if (!eq || parse_i64(eq + 1, &v) || v < 0) {
      free(done);
      return coil_diag_set(d, "coil: --size expects SYM=N with N >= 0, got '%s'", sizes[i]);
    }
    int k;
    for (k = 0; k < nsym; k++)
      if (sig->size_var[k] && strlen(coil_sym_var_name(sig->sym, k)) == (size_t)(eq - sizes[i]) &&
          strncmp(coil_sym_var_name(sig->sym, k), sizes[i], (size_t)(eq - sizes[i])) == 0)
        break;
    if (k == nsym) {
      free(done);
      return coil_diag_set(d, "coil: --size names '%.*s', which is not a size symbol of the graph",
                           (int)(eq - sizes[i]), sizes[i]);
    }
    if (!done[k]) {
      bind[k] = v;
      done[k] = true;
    }
  }
  for (int k = 0; k < nsym; k++)
    if (sig->size_var[k] && !done[k]) {
      bind[k] = 8;
      fprintf(stderr, "note: size %s = 8 (no input fixes it; set it with --size %s=N)\n",
              coil_sym_var_name(sig->sym, k), coil_sym_var_name(sig->sym, k));
    }
  free(done);
  return 0;
}

/* Moves the tensors of `from` that the run needs into `to`; generates the missing ones, except
 * those an artifact has embedded (it binds them itself). */
static int
gather_inputs(const run_sig *sig, coil_tensor_list *given, uint64_t seed, char **sizes,
              int nsizes, coil_tensor_list *to, coil_diag *d)
{
  int64_t *bind = calloc((size_t)coil_sym_nvars(sig->sym) + 1, sizeof(int64_t));
  if (bind_sizes(sig, given, sizes, nsizes, bind, d)) {
    free(bind);
    return -1;
  }
  uint64_t state = seed;
  for (int i = 0; i < sig->ninputs; i++) {
    const run_input *v = &sig->inputs[i];
    coil_tensor *t = coil_tensor_list_find(given, v->name);
    coil_tensor fresh;
    if (t) {
      fresh = *t;
      memset(t, 0, sizeof *t); /* moved */
    } else if (v->embedded) {
      continue;
    } else {
      int64_t shape[COIL_MAX_RANK];
      for (int k = 0; k < v->rank; k++)
        if (coil_sym_eval(sig->sym, v->dims[k], bind, coil_sym_nvars(sig->sym), &shape[k], d)) {
          free(bind);
          return -1;
        }
      if (coil_tensor_init(&fresh, v->dtype, v->rank, shape, d)) {
        char msg[sizeof d->msg];
        snprintf(msg, sizeof msg, "%s", d->msg);
        d->msg[0] = 0;
        coil_diag_set(d, "%%%.200s (%s of %d dimensions): %.1500s", v->name, coil_dtype_name(v->dtype), v->rank,
                      msg);
        free(bind);
        return -1;
      }
      fill_random(&fresh, &state);
      if (v->weight)
        fprintf(stderr, "note: %s %%%s was not given (--weights); using random values\n",
                v->weight, v->name);
    }
    coil_tensor_list_add(to, v->name, &fresh);
  }
  free(bind);
  return 0;
}

static void
print_shape(const coil_tensor *t)
{
  printf("%s[", coil_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++)
    printf("%s%lld", i ? ", " : "", (long long)t->shape[i]);
  printf("]");
}

static void
summarise(const run_sig *sig, const coil_tensor_list *outs)
{
  for (int i = 0; i < outs->n; i++) {
    const coil_tensor *t = &outs->tensors[i];
    int64_t n = coil_tensor_numel(t);
    printf("%s (%%%s): ", outs->names[i], i < sig->noutputs ? sig->output_names[i] : "?");
    print_shape(t);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int64_t nans = 0;
    for (int64_t k = 0; k < n; k++) {
      double v = coil_tensor_get_f64(t, k);
      if (isnan(v)) {
        nans++;
        continue;
      }
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
      sum += v;
    }
    if (n > 0 && n > nans)
      printf("  min %.6g  max %.6g  mean %.6g", lo, hi, sum / (double)(n - nans));
    if (nans)
      printf("  nan %lld", (long long)nans);
    printf("\n    [");
    for (int64_t k = 0; k < n && k < 6; k++)
      printf("%s%.6g", k ? ", " : "", coil_tensor_get_f64(t, k));
    printf("%s]\n", n > 6 ? ", ..." : "");
  }
}

/* Compares outputs with expected tensors; prints one line per output; returns mismatches. */
static int
compare(const coil_tensor_list *got, const coil_tensor_list *want, double rtol_opt, double atol_opt)
{
  int bad = 0;
  for (int i = 0; i < got->n; i++) {
    const coil_tensor *g = &got->tensors[i], *w = coil_tensor_list_find(want, got->names[i]);
    if (!w) {
      printf("%s: MISSING in the expected file\n", got->names[i]);
      bad++;
      continue;
    }
    double rtol, atol;
    coil_tolerance_default(g->dtype, &rtol, &atol);
    if (rtol_opt >= 0)
      rtol = rtol_opt;
    if (atol_opt >= 0)
      atol = atol_opt;
    coil_compare c;
    if (coil_tensor_allclose(g, w, rtol, atol, &c)) {
      printf("%s: ok (%lld elements, rtol %g, atol %g)\n", got->names[i],
             (long long)coil_tensor_numel(g), rtol, atol);
      continue;
    }
    bad++;
    if (!c.same_shape) {
      printf("%s: MISMATCH dtype or shape: got ", got->names[i]);
      print_shape(g);
      printf(", expected ");
      print_shape(w);
      printf("\n");
    } else {
      printf("%s: MISMATCH at %lld of %lld elements; worst at %lld: got %.9g, expected %.9g\n",
             got->names[i], (long long)c.mismatches, (long long)coil_tensor_numel(g),
             (long long)c.worst, c.worst_got, c.worst_want);
    }
  }
  return bad;
}

static int
read_st(const char *path, coil_tensor_list *into, coil_diag *d)
{
  coil_tensor_list l = {0};
  if (coil_safetensors_read(path, &l, d))
    return -1;
  for (int i = 0; i < l.n; i++) {
    if (coil_tensor_list_find(into, l.names[i])) {
      coil_diag_set(d, "%s: tensor '%s' is also given in another file", path, l.names[i]);
      coil_tensor_list_free(&l);
      return -1;
    }
    coil_tensor_list_add(into, l.names[i], &l.tensors[i]);
  }
  coil_tensor_list_free(&l);
  return 0;
}

static int
parse_double(const char *s, double *out)
{
  char *end;
  errno = 0;
  *out = strtod(s, &end);
  return errno || end == s || *end || !(*out >= 0) ? -1 : 0;
}

/* Where a plugin is found: the config's plugin_path, COIL_PLUGIN_PATH, then the build's plugin
 * directory (or <prefix>/lib/coil/plugins beside an installed coil). */
static const char *
builtin_plugin_dir(void)
{
  static char dir[4096];
  char exe[4000];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len > 0) { /* installed: <prefix>/bin/coil beside <prefix>/lib/coil/plugins */
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = 0;
      snprintf(dir, sizeof dir, "%s/../lib/coil/plugins", exe);
      if (access(dir, R_OK) == 0)
        return dir;
    }
  }
#ifdef COIL_BUILD_PLUGIN_DIR
  return COIL_BUILD_PLUGIN_DIR;
#else
  return NULL;
#endif
}

static void
backend_teardown(backend_setup *b)
{
  coil_plugin_dirs_free(&b->env.dirs);
  free(b->keys);
  free(b->values);
  for (int k = 0; k < b->env.nbackends; k++) {
    free((void *)b->list[k].option_keys);
    free((void *)b->list[k].option_values);
  }
  coil_config_free(b->config);
}

/* Plugin `name`'s options ([plugin.NAME] without library, then the general coil.* ones) into
 * new arrays *keys, *values (free both); their count. */
static int
plugin_options(const backend_setup *b, const char *name, const char ***keys, const char ***values)
{
  const char *const *k = NULL, *const *v = NULL, *const *origins = NULL;
  int n = coil_config_plugin_options(b->config, name, &k, &v, &origins), m = 0;
  *keys = calloc((size_t)n + COIL_CONFIG_GENERAL + 1, sizeof **keys);
  *values = calloc((size_t)n + COIL_CONFIG_GENERAL + 1, sizeof **values);
  if (!*keys || !*values)
    abort();
  for (int i = 0; i < n; i++)
    if (strcmp(k[i], "library") != 0) { /* the host's key: where the plugin is */
      (*keys)[m] = k[i];
      (*values)[m++] = v[i];
    }
  /* the general options a plugin may act on, as coil.KEY */
  return m + coil_config_general_options(b->config, *keys + m, *values + m);
}

/* The effective configuration (ini < COIL_* < --backend) and what running on its backend needs.
 * The design's default backend is cpu; until its plugin exists, a default that finds no cpu
 * plugin runs on ref, saying so. */
static int
setup_backend(backend_setup *b, const char *flag_backend, const char *config_file, coil_diag *d)
{
  memset(b, 0, sizeof *b);
  b->config = coil_config_new();
  const char *path = coil_config_file_default(config_file);
  if ((path && coil_config_load_file(b->config, path, d)) || coil_config_apply_env(b->config, d) ||
      (flag_backend && coil_config_set(b->config, "backend", flag_backend, d)))
    return -1;
  b->name = coil_config_get(b->config, "backend");
  coil_plugin_dirs_init(&b->env.dirs, coil_config_get(b->config, "plugin_path"), builtin_plugin_dir());
  if (strcmp(b->name, "cpu") == 0 && strcmp(coil_config_origin(b->config, "backend"), "default") == 0) {
    bool found = false;
    for (int i = 0; i < b->env.dirs.n && !found; i++) {
      char file[4096];
      snprintf(file, sizeof file, "%s/libcoil_cpu.so", b->env.dirs.dirs[i]);
      found = access(file, F_OK) == 0;
    }
    if (!found) {
      fprintf(stderr, "note: the default backend cpu is not built yet; running on ref "
                      "(choose one with --backend or [coil] backend)\n");
      b->name = "ref";
    }
  }
  b->env.noptions = plugin_options(b, b->name, &b->keys, &b->values);
  /* a list (backend = template, cpu): each one's options (the config checked the names) */
  for (const char *s = strchr(b->name, ',') ? b->name : ""; *s && b->env.nbackends < COIL_BACKEND_MAX_LIST;) {
    size_t len = strcspn(s, ",");
    char *name = b->list_names[b->env.nbackends];
    snprintf(name, sizeof b->list_names[0], "%.*s", (int)len, s);
    coil_backend_opts *o = &b->list[b->env.nbackends++];
    const char **k, **v;
    o->name = name;
    o->noptions = plugin_options(b, name, &k, &v);
    o->option_keys = k, o->option_values = v;
    s += len + (s[len] == ',');
  }
  b->env.backends = b->list;
  b->env.option_keys = b->keys;
  b->env.option_values = b->values;
  b->env.cache_dir = coil_config_get(b->config, "cache_dir"); /* "" turns the cache off */
  coil_cache_remote_from_config(b->config, &b->remote);
  b->env.remote = &b->remote;
  b->env.convolution = coil_config_get(b->config, "convolution");
  b->env.attention = coil_config_get(b->config, "attention");
  b->env.matmul = coil_config_get(b->config, "matmul");
  b->env.decompose_k = coil_config_get(b->config, "decompose_k");
  const char *dump = coil_config_get(b->config, "debug_dump"); /* --dump overrides it */
  b->env.dump_dir = dump && *dump ? dump : NULL;
  return 0;
}

static coil_plugin_options
backend_options(const backend_setup *bs)
{
  return (coil_plugin_options){.struct_size = sizeof(coil_plugin_options), .count = (size_t)bs->env.noptions,
                               .keys = bs->env.option_keys, .values = bs->env.option_values};
}

/* Opens the backend's plugin and creates an instance with its options. */
static int
open_backend(const backend_setup *bs, coil_loaded_plugin **lp, coil_plugin **inst, coil_diag *d)
{
  coil_plugin_options opts = backend_options(bs);
  return coil_plugin_open(bs->name, (const char *const *)bs->env.dirs.dirs, bs->env.dirs.n, lp, d) ||
                 (coil_plugin_set_log(*lp, coil_backend_log_stderr, NULL), coil_plugin_create(*lp, &opts, inst, d))
             ? -1
             : 0;
}

/* Hands p to the plugin's compile: into DUMP/BACKEND/ when dumping (the plugin's output code
 * beside the other dumps), else into a temporary directory removed afterwards. */
static int
plugin_compile(const backend_setup *bs, const coil_loaded_plugin *lp, coil_plugin *inst,
               const coil_wir_program *p, const char *dump_dir, coil_diag *d)
{
  char dir[4096];
  bool keep = dump_dir != NULL;
  if (keep && strlen(dump_dir) > 3000)
    return coil_diag_set(d, "%s: dump directory name too long", dump_dir);
  if (keep) {
    snprintf(dir, sizeof dir, "%s/%s", dump_dir, bs->name);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
      return coil_diag_set(d, "%s: cannot create: %s", dir, strerror(errno));
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/coil-compile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
      return coil_diag_set(d, "%s: cannot create a directory: %s", dir, strerror(errno));
  }
  coil_plugin_options opts = backend_options(bs);
  int rc = coil_plugin_compile(lp, inst, p, dir, &opts, d) ? -1 : 0;
  if (rc == 0)
    printf("plugin %s compiled it%s%s\n", bs->name, keep ? " into " : "", keep ? dir : "");
  if (!keep) { /* the artifact was only a check: remove it */
    DIR *dp = opendir(dir);
    struct dirent *e;
    while (dp && (e = readdir(dp))) {
      char f[4096 + 260];
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        snprintf(f, sizeof f, "%.4000s/%.255s", dir, e->d_name);
        remove(f);
      }
    }
    if (dp)
      closedir(dp);
    rmdir(dir);
  }
  return rc;
}

/* -v: what the local and remote compile cache did (one line). */
static void
print_cache_counts(const backend_setup *bs, int compiles, const coil_cache_counts *c)
{
  char url[512] = "none";
  if (bs->env.remote && bs->env.remote->url && *bs->env.remote->url)
    coil_remote_redact(bs->env.remote->url, url, sizeof url);
  printf("cache: compiles %d; local hit %d, remote hit %d, remote miss %d, rejected %d, errors %d, skipped %d; "
         "published %d, already there %d; remote %s (%.3f ms)\n",
         compiles, c->local_hits, c->remote_hits, c->remote_misses, c->remote_rejected, c->remote_errors,
         c->remote_skipped, c->published, c->publish_raced, url, c->remote_ms);
}

/* Compiles p through the compile cache (and the remote one behind it): says where the entry
 * came from and, verbose, what the caches did and how long it took. */
static int
cached_compile(const backend_setup *bs, const coil_loaded_plugin *lp, coil_plugin *inst,
               const coil_wir_program *p, bool verbose, coil_diag *d)
{
  coil_plugin_options opts = backend_options(bs);
  coil_cache_counts counts = {0};
  coil_cache_where w = {.dir = bs->env.cache_dir, .remote = bs->env.remote, .counts = &counts};
  const char *id = lp->api.identity ? lp->api.identity(inst) : "";
  char *entry = NULL;
  int fd = -1;
  coil_cache_outcome how;
  double t0 = now_seconds();
  if (coil_cache_fetch(&w, id ? id : "", lp, inst, p, &opts, &entry, &fd, &how, d))
    return -1;
  double ms = 1e3 * (now_seconds() - t0);
  static const char *const said[] = {
      [COIL_CACHE_HIT] = "found in the local compile cache",
      [COIL_CACHE_MISS] = "compiled it into the compile cache",
      [COIL_CACHE_REBUILT] = "compiled it again into the compile cache (the entry there failed its check)",
      [COIL_CACHE_REMOTE_HIT] = "fetched it from the remote cache into the local one",
  };
  printf("plugin %s %s: %s (%.3f ms)\n", bs->name, said[how], entry, ms);
  if (verbose)
    print_cache_counts(bs, how == COIL_CACHE_MISS || how == COIL_CACHE_REBUILT, &counts);
  if (fd >= 0)
    close(fd);
  free(entry);
  return 0;
}

/* ---- artifacts (core/artifact.h): coil compile --backend NAME -o DIR ---- */

/* Compiles p with the backend's plugin into the artifact directory dir (replacing an artifact
 * there), with the graph's name and output names and, when weights is set, its params. */
static int
artifact_compile(const backend_setup *bs, const coil_loaded_plugin *lp, coil_plugin *inst,
                 const coil_graph *g, const coil_wir_program *p, const char *dir,
                 const char *weights, coil_diag *d)
{
  coil_plugin_options opts = backend_options(bs);
  const char **names = calloc((size_t)g->noutputs + 1, sizeof *names);
  for (int i = 0; i < g->noutputs; i++)
    names[i] = g->outputs[i]->name;
  coil_artifact_write_opts o = {.graph_name = g->name, .noutput_names = g->noutputs,
                                .output_names = names, .embed_weights = weights, .replace = true};
  int rc = -1;
  if (coil_artifact_write(lp, inst, p, &opts, &o, dir, d) == 0) {
    printf("artifact %s: compiled by plugin %s %s%s%s\n", dir, lp->api.name, lp->api.version,
           weights ? ", with the params of " : "", weights ? weights : "");
    rc = 0;
  }
  free(names);
  return rc;
}

/* ---- end of artifacts ---- */

static void
list_one(void *user, const coil_plugin_listing *e)
{
  int *count = user;
  (*count)++;
  if (!e->plugin) {
    printf("%-10s %s\n           error: %s\n", e->name, e->path, e->error);
    return;
  }
  const coil_plugin_api *a = &e->plugin->api;
  printf("%-10s %s %s (%s)%s\n           %s; Wrapper IR %u.%u-%u; features:%s%s%s%s\n", a->name, a->version,
         e->path, a->vendor, e->shadowed ? " [shadowed by an earlier directory]" : "",
         a->features & COIL_FEATURE_EXECUTES ? "executes" : "emits only", a->wir_major, a->wir_min_minor,
         a->wir_max_minor, a->features & COIL_FEATURE_EXECUTES ? " executes" : "",
         a->features & COIL_FEATURE_EMITS_ONLY ? " emits-only" : "",
         a->features & COIL_FEATURE_GRAPH_CAPTURE ? " graph-capture" : "",
         a->features & COIL_FEATURE_AUTOTUNE ? " autotune" : "");
}

/* coil plugins [--config FILE]: every plugin on the search path, with its metadata. */
static int
cmd_plugins(int argc, char **argv)
{
  const char *config_file = NULL;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
      config_file = argv[++i];
    else
      return usage_error("usage: coil plugins [--config FILE]%s", "");
  }
  coil_diag d = {0};
  backend_setup bs;
  if (setup_backend(&bs, "ref", config_file, &d))
    return fail(&d);
  printf("search path:");
  for (int i = 0; i < bs.env.dirs.n; i++)
    printf(" %s", bs.env.dirs.dirs[i]);
  printf("\nref        built in: the reference interpreter (f64, op by op)\n");
  int count = 0;
  coil_plugin_list((const char *const *)bs.env.dirs.dirs, bs.env.dirs.n, list_one, &count);
  if (!count)
    printf("(no plugins found)\n");
  backend_teardown(&bs);
  return 0;
}

/* "12.3 MiB" */
static void
human_bytes(uint64_t n, char *out, size_t size)
{
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024 && u < 4)
    v /= 1024, u++;
  snprintf(out, size, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* "2026-12-02 04:55 UTC" */
static void
utc_time(time_t t, char *out, size_t size)
{
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(out, size, "%Y-%m-%d %H:%M UTC", &tm))
    snprintf(out, size, "%lld", (long long)t);
}

/* A size with an optional K, M, G or T suffix (powers of 1024): 0 on success. */
static int
parse_size(const char *s, uint64_t *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || v < 0 || v != v)
    return -1;
  static const char units[] = "KMGT";
  const char *u = *end && (*end & ~0x20) ? strchr(units, *end & ~0x20) : NULL; /* K or k, ... */
  double mul = 1;
  if (u) {
    for (const char *c = units; c <= u; c++)
      mul *= 1024;
    end++;
    if (*end == 'i') /* "MiB" as well as "M" and "MB" */
      end++;
  }
  if (*end == 'B')
    end++;
  if (*end || v * mul > 1.8e19)
    return -1;
  *out = (uint64_t)(v * mul);
  return 0;
}

/* coil cache stats | clear | prune --max-size N: the local compile cache ([coil] cache_dir). */
static int
cmd_cache(int argc, char **argv)
{
  const char *what = argc > 0 ? argv[0] : "", *config_file = NULL, *max_size = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
      config_file = argv[++i];
    else if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc && strcmp(what, "prune") == 0)
      max_size = argv[++i];
    else
      return usage_error("cache: unexpected '%s' (usage: coil cache stats | clear | prune --max-size N[K|M|G] "
                         "[--config FILE])", argv[i]);
  }
  bool stats = strcmp(what, "stats") == 0, clear = strcmp(what, "clear") == 0, prune = strcmp(what, "prune") == 0;
  if (!stats && !clear && !prune)
    return usage_error("cache: expected stats, clear or prune, got '%s' (usage: coil cache stats | clear | "
                       "prune --max-size N[K|M|G] [--config FILE])", what);
  uint64_t limit = 0;
  if (prune && (!max_size || parse_size(max_size, &limit) != 0))
    return usage_error("cache prune: --max-size takes a size such as 500M or 2G (got '%s')",
                       max_size ? max_size : "nothing");
  coil_diag d = {0};
  backend_setup bs;
  if (setup_backend(&bs, "ref", config_file, &d))
    return fail(&d);
  const char *dir = bs.env.cache_dir;
  if (!dir || !*dir) {
    backend_teardown(&bs);
    fprintf(stderr, "coil: cache: cache_dir is empty: the compile cache is off\n");
    return 1;
  }
  int rc = 0;
  if (stats) {
    coil_cache_summary s;
    if (coil_cache_stats(dir, &s, &d)) {
      rc = fail(&d);
    } else if (!s.exists) {
      printf("cache %s: none yet (0 entries)\n", dir);
    } else {
      char bytes[32], oldest[40], newest[40];
      human_bytes(s.bytes, bytes, sizeof bytes);
      printf("cache %s: %ld entr%s, %s\n", dir, s.entries, s.entries == 1 ? "y" : "ies", bytes);
      if (s.entries) {
        utc_time(s.oldest, oldest, sizeof oldest);
        utc_time(s.newest, newest, sizeof newest);
        printf("last used: the oldest %s, the newest %s\n", oldest, newest);
      }
      printf("temporaries: %ld (entries being written, or left by writers that died)\n", s.temporaries);
      printf("secret key: %s\n", s.has_key ? "present (" COIL_CACHE_KEY_FILE ")" : "none yet");
    }
  } else {
    coil_cache_prune_report r;
    if (coil_cache_prune(dir, limit, &r, &d)) {
      rc = fail(&d);
    } else {
      char freed[32], left[32];
      human_bytes(r.freed, freed, sizeof freed);
      human_bytes(r.left, left, sizeof left);
      printf("cache %s: removed %ld entr%s (%s), kept %ld (%s)", dir, r.removed, r.removed == 1 ? "y" : "ies",
             freed, r.kept, left);
      if (r.busy)
        printf(", %ld of them in use by a running process", r.busy);
      printf("\n");
    }
  }
  backend_teardown(&bs);
  return rc;
}

static int
cmd_run(int argc, char **argv)
{
  const char *graph = NULL, *weights = NULL, *inputs = NULL, *out = NULL, *expect = NULL;
  const char *backend = NULL, *config_file = NULL, *dump_dir = NULL;
  int64_t seed = 0;
  double rtol = -1, atol = -1;
  char *sizes[64];
  int nsizes = 0;
  bool no_cache = false, verbose = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    bool has_val = i + 1 < argc;
    if (a[0] != '-' || a[1] == 0) {
      if (graph)
        return usage_error("run takes one graph file; unexpected '%s'", a);
      graph = a;
      continue;
    }
    if (strcmp(a, "--no-cache") == 0 || strcmp(a, "-v") == 0) {
      *(a[1] == 'v' ? &verbose : &no_cache) = true;
      continue;
    }
    if (!has_val)
      return usage_error("option %s needs a value", a);
    const char *v = argv[++i];
    if (strcmp(a, "--backend") == 0) backend = v;
    else if (strcmp(a, "--config") == 0) config_file = v;
    else if (strcmp(a, "--dump") == 0) dump_dir = v;
    else if (strcmp(a, "--weights") == 0) weights = v;
    else if (strcmp(a, "--inputs") == 0) inputs = v;
    else if (strcmp(a, "--out") == 0) out = v;
    else if (strcmp(a, "--expect") == 0) expect = v;
    else if (strcmp(a, "--seed") == 0) {
      if (parse_i64(v, &seed))
        return usage_error("--seed expects an integer, got '%s'", v);
    } else if (strcmp(a, "--rtol") == 0 || strcmp(a, "--atol") == 0) {
      if (parse_double(v, a[2] == 'r' ? &rtol : &atol))
        return usage_error("tolerances must be non-negative numbers, got '%s'", v);
    } else if (strcmp(a, "--size") == 0) {
      if (nsizes == 64)
        return usage_error("at most 64 --size options%s", "");
      sizes[nsizes++] = argv[i];
    } else {
      return usage_error("unknown option '%s'", a);
    }
  }
  if (!graph)
    return usage_error("run needs a graph file%s", "");

  coil_diag d = {0};
  /* ---- artifacts: coil run DIR runs what coil.json describes, on the plugin it names ---- */
  coil_stored_artifact *art = NULL;
  struct stat st;
  if (stat(graph, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (dump_dir)
      return usage_error("--dump compiles; %s is compiled already", graph);
    if (coil_artifact_open(graph, &art, &d))
      return fail(&d);
    if (backend && strcmp(backend, art->plugin) != 0) {
      fprintf(stderr, "coil: %s was compiled for plugin %s, not %s\n", graph, art->plugin, backend);
      coil_artifact_close(art);
      return 1;
    }
    backend = art->plugin;
  }
  /* ---- end of artifacts ---- */
  backend_setup bs;
  if (setup_backend(&bs, backend, config_file, &d)) {
    coil_artifact_close(art);
    return fail(&d);
  }
  if (dump_dir || art) /* --dump over [coil] debug_dump; an artifact is not compiled */
    bs.env.dump_dir = dump_dir;
  if (no_cache)
    bs.env.cache_dir = NULL;
  if (!art && bs.env.cache_dir && *bs.env.cache_dir && strcmp(bs.name, "ref") != 0 &&
      coil_cache_prepare(bs.env.cache_dir, &d)) {
    fprintf(stderr, "note: compiling without the cache: %s\n", d.msg);
    bs.env.cache_dir = NULL;
    d.msg[0] = 0;
  }
  backend = bs.name;
  coil_graph *g = art ? NULL : coil_graph_load(graph, &d);
  if (!g && !art) {
    backend_teardown(&bs);
    return fail(&d);
  }
  run_sig sig;
  const char **out_names = g ? calloc((size_t)g->noutputs + 1, sizeof *out_names) : NULL;
  if (g)
    sig_from_graph(&sig, g, out_names);
  else
    sig_from_artifact(&sig, art);
  coil_tensor_list given = {0}, all = {0}, outs = {0}, want = {0};
  int rc = 1;
  if ((weights && read_st(weights, &given, &d)) || (inputs && read_st(inputs, &given, &d)))
    goto done;
  for (int i = 0; i < given.n; i++) {
    bool used = false;
    for (int k = 0; k < sig.ninputs; k++)
      used = used || strcmp(sig.inputs[k].name, given.names[i]) == 0;
    if (!used)
      fprintf(stderr, "note: tensor '%s' is not an input of graph %s; ignored\n", given.names[i], sig.name);
  }
  if (gather_inputs(&sig, &given, (uint64_t)seed, sizes, nsizes, &all, &d)) {
    if (strncmp(d.msg, graph, strlen(graph)) != 0) { /* say which file the inputs are for */
      char msg[sizeof d.msg];
      snprintf(msg, sizeof msg, "%s", d.msg);
      d.msg[0] = 0;
      coil_diag_set(&d, "%.500s: error: the inputs: %.1500s", graph, msg);
    }
    goto done;
  }
  if (art) {
    coil_plugin_options opts = {.struct_size = sizeof opts, .count = (size_t)bs.env.noptions,
                                .keys = bs.env.option_keys, .values = bs.env.option_values};
    if (coil_artifact_run(art, (const char *const *)bs.env.dirs.dirs, bs.env.dirs.n, &opts, &all,
                          &outs, &d))
      goto done;
  } else {
    coil_backend_stats stats = {0};
    bs.env.stats = &stats;
    if (coil_backend_run(g, backend, &bs.env, &all, &outs, &d))
      goto done;
    if (verbose)
      print_cache_counts(&bs, stats.compiles, &stats.cache);
  }
  printf("graph %s on %s: %d output%s\n", sig.name, backend, outs.n, outs.n == 1 ? "" : "s");
  summarise(&sig, &outs);
  if (out && coil_safetensors_write(out, &outs, &d))
    goto done;
  if (expect) {
    if (coil_safetensors_read(expect, &want, &d))
      goto done;
    int bad = compare(&outs, &want, rtol, atol);
    if (bad) {
      fprintf(stderr, "coil: %d output%s differ from %s\n", bad, bad == 1 ? "" : "s", expect);
      rc = 1;
      d.msg[0] = 0;
      goto done;
    }
  }
  rc = 0;
done:
  if (rc && d.msg[0])
    fail(&d);
  coil_tensor_list_free(&given);
  coil_tensor_list_free(&all);
  coil_tensor_list_free(&outs);
  coil_tensor_list_free(&want);
  sig_free(&sig);
  free(out_names);
  coil_graph_free(g);
  coil_artifact_close(art);
  backend_teardown(&bs);
  return rc;
}

/* coil config explain [--config FILE] [--mode M] [--backend B]: every effective option with its
 * value and origin, the plugin sections, and what each mode turns on (docs/config.md). The ini
 * file is --config, else $COIL_CONFIG, else ./coil.ini if there is one. */
static int
cmd_config(int argc, char **argv)
{
  if (argc < 1 || strcmp(argv[0], "explain") != 0)
    return usage_error("config takes a subcommand: explain [--config FILE] [--mode M] "
                       "[--backend B]%s", "");
  const char *file = NULL, *mode = NULL, *backend = NULL;
  for (int i = 1; i < argc; i++) {
    const char **slot = strcmp(argv[i], "--config") == 0    ? &file
                        : strcmp(argv[i], "--mode") == 0    ? &mode
                        : strcmp(argv[i], "--backend") == 0 ? &backend
                                                            : NULL;
    if (!slot)
      return usage_error("unknown option '%s' for config explain", argv[i]);
    if (i + 1 == argc)
      return usage_error("option %s needs a value", argv[i]);
    *slot = argv[++i];
  }
  coil_diag d = {0};
  coil_config *c = coil_config_new();
  const char *path = coil_config_file_default(file);
  int rc = 0;
  if ((path && coil_config_load_file(c, path, &d)) || coil_config_apply_env(c, &d))
    rc = 1;
  else if ((mode && coil_config_set(c, "mode", mode, &d)) ||
           (backend && coil_config_set(c, "backend", backend, &d)))
    rc = 2;
  if (rc == 0) {
    coil_strbuf out = {0};
    coil_config_explain(c, &out);
    fputs(out.s, stdout);
    coil_strbuf_free(&out);
  } else {
    fprintf(stderr, "%s\n", d.msg);
  }
  coil_config_free(c);
  return rc;
}

static int
dispatch(int argc, char **argv)
{
  if (argc < 2)
    return usage_error("no command given%s", "");
  const char *cmd = argv[1];
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("coil %s\n", COIL_VERSION_STRING);
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    fputs(usage, stdout);
    return 0;
  }
  if (strcmp(cmd, "check") == 0)
    return cmd_check(argc - 2, argv + 2);
  if (strcmp(cmd, "ops") == 0)
    return cmd_ops(argc - 2, argv + 2);
  if (strcmp(cmd, "bench") == 0) {
    for (int i = 2; i < argc; i++)
      if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { /* not a minute of benchmark */
        fputs(usage, stdout);
        return 0;
      }
    for (int i = 2; i < argc; i++)
      if (strcmp(argv[i], "--core-only") == 0)
        return coil_bench_core(argc - 2, argv + 2);
    const char *env = getenv("COIL_PLUGIN_PATH"); /* its first directory, else the build's */
    char first[4096];
    snprintf(first, sizeof first, "%s", env && *env ? env : "");
    char *colon = strchr(first, ':');
    if (colon)
      *colon = 0;
    for (int i = 2; i < argc; i++)
      if (strcmp(argv[i], "--conv") == 0)
        return coil_bench_conv(argc - 2, argv + 2, first[0] ? first : builtin_plugin_dir());
    for (int i = 2; i + 1 < argc; i++) {
      if (strcmp(argv[i], "--backend") != 0)
        continue;
      if (strcmp(argv[i + 1], "cuda") == 0 || strcmp(argv[i + 1], "hip") == 0) /* the GPU benchmark */
        return coil_bench_cuda(argc - 2, argv + 2, first[0] ? first : builtin_plugin_dir());
      if (strcmp(argv[i + 1], "cpu") != 0)
        return usage_error("bench: no benchmark for backend '%s' (cpu, cuda, hip)", argv[i + 1]);
    }
    return coil_bench_cpu(argc - 2, argv + 2, first[0] ? first : builtin_plugin_dir());
  }
  if (strcmp(cmd, "cache") == 0)
    return cmd_cache(argc - 2, argv + 2);
  if (strcmp(cmd, "plugins") == 0)
    return cmd_plugins(argc - 2, argv + 2);
  if (strcmp(cmd, "compile") == 0)
    return cmd_compile(argc - 2, argv + 2);
  if (strcmp(cmd, "run") == 0)
    return cmd_run(argc - 2, argv + 2);
  if (strcmp(cmd, "config") == 0)
    return cmd_config(argc - 2, argv + 2);
  return usage_error("unknown command '%s'", cmd);
}

/* Runs the command, then makes sure its standard output reached its destination: output lost
 * to a full disk or a closed pipe is an error, not exit status 0. */
int
main(int argc, char **argv)
{
  int rc = dispatch(argc, argv);
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "coil: cannot write the standard output: %s\n",
            errno ? strerror(errno) : "an earlier write failed");
    return rc ? rc : 1;
  }
  return rc;
}
