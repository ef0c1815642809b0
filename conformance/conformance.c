/* conformance.c — coil-conformance: what a vendor runs against a backend plugin until it
 * passes. Tiers: op (every op the plugin claims, over dtypes and shape classes, against the
 * reference interpreter), model (PyTorch's outputs for real exported graphs), abi (the plugin
 * contract itself), emit (generated code checked by the real toolchain, for plugins that only
 * emit), random (generated graphs against the reference interpreter, failures shrunk and
 * printed with their seed). Exit status: 0 when nothing failed, 1 when a case failed, 2 on a usage error.
 * docs/plugin-guide.md walks through a first run. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "config.h"

int conf_print_case(const conf_ctx *c, FILE *f); /* tier_op.c */
int conf_write_cases(const conf_ctx *c, const char *dir);
int conf_write_one_case(const conf_ctx *c, const char *dir);

static const char usage[] =
    "usage: coil-conformance --plugin NAME|PATH [options]\n"
    "\n"
    "  --plugin NAME|PATH  the backend: a name looked up as libcoil_NAME.so (plugin_path, then\n"
    "                      $COIL_PLUGIN_PATH, then coil's own plugins; or [plugin.NAME] library\n"
    "                      in the ini file), or the path of the .so\n"
    "  --config INI        the ini file: plugin_path and the plugin's [plugin.NAME] options\n"
    "                      (default: $COIL_CONFIG, else ./coil.ini if present)\n"
    "  --tier LIST         tiers to run, comma-separated: op,model,abi,emit,random (default:\n"
    "                      op,model,abi,emit; random runs when named)\n"
    "  --seed S            random tier: graph i of the run is generated from seed S + i (default 1)\n"
    "  --count N           random tier: run N graphs (default 1000)\n"
    "  --time SECONDS      random tier: run graphs until SECONDS have passed (overrides --count)\n"
    "  --batch K           random tier: compile K graphs together as one program (1 to 16,\n"
    "                      default 1): fewer compiles for a plugin whose compile is slow\n"
    "  --filter RE         only cases whose id TIER/NAME/DTYPE/SHAPE matches the POSIX extended\n"
    "                      regular expression RE, e.g. 'op/aten\\.add\\..*/f32/'\n"
    "  --sample N          op tier: run one case in N of each op overload (its first selected\n"
    "                      case, then every Nth), so that every overload still runs once; for a\n"
    "                      slow build such as a sanitizer's (default 1: every case)\n"
    "  --junit FILE        write a JUnit XML report\n"
    "  --csv FILE          write a CSV report (tools/support-matrix.sh reads it)\n"
    "  -j N                run N cases at a time (default: the number of CPUs)\n"
    "  --timeout S         fail a case that runs longer than S seconds (default 300)\n"
    "  --list              print the ids of the selected cases and exit\n"
    "  --print-case        print the graph of the first selected op case and exit (with --tier\n"
    "                      random: the graph of --seed)\n"
    "  --write-cases DIR   write every selected op case to DIR/op~NAME~DTYPE~SHAPE/ and exit:\n"
    "                      graph.coil, the inputs the op tier gives a plugin (a case's data\n"
    "                      comes from its id alone) and the reference interpreter's outputs as\n"
    "                      safetensors, case.json (the comparison); needs no --plugin\n"
    "  --repro ID          run the one case of this id (op/... or model/...; as --list and the\n"
    "                      reports print it) exactly as the suite runs it (the same inputs,\n"
    "                      sizes, alignment and guard bytes) and print its details: the graph,\n"
    "                      the inputs, each output's result and its 10 worst elements; its\n"
    "                      stderr is not captured. Exit status 1 if it fails\n"
    "  --write-case ID DIR write the op case of this id to DIR: graph.coil, inputs*.safetensors,\n"
    "                      expected*.safetensors and case.json (seed, sizes, input offset,\n"
    "                      guard bytes), for a debugger of your own; needs no --plugin\n"
    "  -v                  a line per case as it finishes (with what it wrote to stderr)\n"
    "  --source-dir DIR    where conformance/models lives (default: this build's source)\n"
    "\n"
    "Each case runs in its own process: a crash or a hang fails that case only, and what it\n"
    "writes to stderr is shown under its failure. A case the plugin does not claim (its\n"
    "supports() says no to an op or dtype the case needs) is \"not supported\", which is not a\n"
    "failure; one it claims wholly but compile refuses is. Exit status 0: no case failed.\n";

/* <prefix>/bin/coil-conformance → <prefix>/<rel> if that exists. */
static const char *
beside_exe(const char *rel, char *buf, size_t n)
{
  char exe[PATH_MAX - 32];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0)
    return NULL;
  exe[len] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash)
    return NULL;
  *slash = 0;
  snprintf(buf, n, "%s/../%s", exe, rel);
  return access(buf, R_OK) == 0 ? buf : NULL;
}

int
main(int argc, char **argv)
{
  conf_ctx c = {.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN), .timeout_s = 300, .random_seed = 1, .random_count = 1000,
                .random_batch = 1};
  const char *config_file = NULL, *tiers = "op,model,abi,emit", *junit = NULL, *csv = NULL, *filter = NULL;
  bool list = false, print_case = false;
  const char *write_cases = NULL, *write_case = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (strcmp(a, "--plugin") == 0 && more)
      c.plugin = argv[++i];
    else if (strcmp(a, "--config") == 0 && more)
      config_file = argv[++i];
    else if (strcmp(a, "--tier") == 0 && more)
      tiers = argv[++i];
    else if (strcmp(a, "--filter") == 0 && more)
      filter = argv[++i];
    else if (strcmp(a, "--sample") == 0 && more) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > 1000000) {
        fprintf(stderr, "coil-conformance: --sample '%s': expected a whole number from 1 to 1000000\n", argv[i]);
        return 2;
      }
      c.sample = (int)v;
    } else if (strcmp(a, "--junit") == 0 && more)
      junit = argv[++i];
    else if (strcmp(a, "--csv") == 0 && more)
      csv = argv[++i];
    else if (strcmp(a, "-j") == 0 && more)
      c.jobs = atoi(argv[++i]);
    else if (strncmp(a, "-j", 2) == 0 && a[2])
      c.jobs = atoi(a + 2);
    else if (strcmp(a, "--timeout") == 0 && more)
      c.timeout_s = atoi(argv[++i]);
    else if (strcmp(a, "--seed") == 0 && more)
      c.random_seed = strtoull(argv[++i], NULL, 10);
    else if (strcmp(a, "--count") == 0 && more)
      c.random_count = atol(argv[++i]);
    else if (strcmp(a, "--batch") == 0 && more)
      c.random_batch = atoi(argv[++i]);
    else if (strcmp(a, "--time") == 0 && more)
      c.random_time_s = atof(argv[++i]);
    else if (strcmp(a, "--source-dir") == 0 && more)
      c.source_dir = argv[++i];
    else if (strcmp(a, "--list") == 0)
      list = true;
    else if (strcmp(a, "--print-case") == 0)
      print_case = true;
    else if (strcmp(a, "--write-cases") == 0 && more)
      write_cases = argv[++i];
    else if (strcmp(a, "--write-case") == 0 && i + 2 < argc)
      c.exact_id = argv[++i], write_case = argv[++i];
    else if (strcmp(a, "--repro") == 0 && more)
      c.exact_id = argv[++i], c.repro = true;
    else if (strcmp(a, "-v") == 0)
      c.verbose = true;
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    } else {
      fprintf(stderr, "coil-conformance: unknown or incomplete option '%s'\n\n%s", a, usage);
      return 2;
    }
  }
  if (c.repro && write_case) {
    fprintf(stderr, "coil-conformance: --repro and --write-case each take one case: give one of them\n");
    return 2;
  }
  if (c.repro) { /* the case's own tier, one process at a time, in the foreground */
    size_t n = strcspn(c.exact_id, "/");
    if (!((n == 2 && strncmp(c.exact_id, "op", 2) == 0) || (n == 5 && strncmp(c.exact_id, "model", 5) == 0))) {
      fprintf(stderr, "coil-conformance: --repro '%s': expected the id of an op or model case (op/NAME/DTYPE/SHAPE, "
                      "model/NAME/-/SHAPE), as --list prints it\n", c.exact_id);
      return 2;
    }
    tiers = n == 2 ? "op" : "model";
    c.jobs = 1;
  }
  if (write_case && strncmp(c.exact_id, "op/", 3) != 0) {
    fprintf(stderr, "coil-conformance: --write-case '%s': expected the id of an op case (op/NAME/DTYPE/SHAPE)\n",
            c.exact_id);
    return 2;
  }
  if (!c.plugin && (write_cases || write_case))
    c.plugin = "interp"; /* unused: the cases are the core's and the reference interpreter's */
  if (!c.plugin) {
    fprintf(stderr, "coil-conformance: --plugin is required\n\n%s", usage);
    return 2;
  }
  if (c.jobs < 1 || c.timeout_s < 1 || c.random_batch < 1 || c.random_batch > 16 || c.random_count < 0 || c.random_time_s < 0) {
    fprintf(stderr, "coil-conformance: -j and --timeout take a positive number, --batch 1 to 16, --count and --time one >= 0\n");
    return 2;
  }
  for (const char *t = tiers; *t;) {
    size_t n = strcspn(t, ",");
    static const char *const known[] = {"op", "model", "abi", "emit", "random"};
    bool ok = false;
    for (int k = 0; k < 5; k++)
      ok = ok || (strlen(known[k]) == n && strncmp(t, known[k], n) == 0);
    if (!ok) {
      fprintf(stderr, "coil-conformance: --tier: unknown tier '%.*s' (expected op, model, abi, emit, random)\n", (int)n, t);
      return 2;
    }
    t += n + (t[n] == ',');
  }
  if (filter) {
    int rc = regcomp(&c.filter, filter, REG_EXTENDED | REG_NOSUB);
    if (rc) {
      char m[256];
      regerror(rc, &c.filter, m, sizeof m);
      fprintf(stderr, "coil-conformance: --filter '%s': %s\n", filter, m);
      return 2;
    }
    c.has_filter = true;
  }
  char buf[PATH_MAX], buf2[PATH_MAX];
  if (!c.source_dir)
    c.source_dir = beside_exe("share/coil", buf, sizeof buf);
  if (!c.source_dir)
    c.source_dir = COIL_SOURCE_DIR;

  /* the ini file: plugin_path, and the plugin's own section */
  coil_config *cfg = coil_config_new();
  coil_diag d = {0};
  const char *path = coil_config_file_default(config_file);
  if ((path && coil_config_load_file(cfg, path, &d)) || coil_config_apply_env(cfg, &d)) {
    fprintf(stderr, "coil-conformance: %s\n", d.msg);
    return 2;
  }
  const char *builtin = beside_exe("lib/coil/plugins", buf2, sizeof buf2);
  coil_plugin_dirs_init(&c.dirs, coil_config_get(cfg, "plugin_path"), builtin ? builtin : COIL_BUILD_PLUGIN_DIR);
  char section[128];
  const char *base = strrchr(c.plugin, '/');
  base = base ? base + 1 : c.plugin;
  if (strncmp(base, "libcoil_", 8) == 0) /* a path: the section is [plugin.NAME] of libcoil_NAME.so */
    snprintf(section, sizeof section, "%.*s", (int)strcspn(base + 8, "."), base + 8);
  else
    snprintf(section, sizeof section, "%s", base);
  const char *const *keys = NULL, *const *values = NULL;
  int n = coil_config_plugin_options(cfg, section, &keys, &values, NULL);
  const char **k2 = calloc((size_t)n + COIL_CONFIG_GENERAL + 1, sizeof *k2),
             **v2 = calloc((size_t)n + COIL_CONFIG_GENERAL + 1, sizeof *v2);
  for (int i = 0; i < n; i++) {
    if (strcmp(keys[i], "library") == 0) { /* the host's key: where the plugin is */
      if (!strchr(c.plugin, '/'))
        c.plugin = values[i];
      continue;
    }
    k2[c.noptions] = keys[i];
    v2[c.noptions++] = values[i];
  }
  c.noptions += coil_config_general_options(cfg, k2 + c.noptions, v2 + c.noptions); /* coil.mode, ... */
  c.option_keys = k2;
  c.option_values = v2;
  c.convolution = coil_config_get(cfg, "convolution");
  c.attention = coil_config_get(cfg, "attention");
  c.matmul = coil_config_get(cfg, "matmul");
  c.decompose_k = coil_config_get(cfg, "decompose_k");

  int rc = 0;
  if (print_case && strcmp(tiers, "random") == 0) {
    conf_print_random(&c, stdout);
    goto done;
  }
  if (print_case || write_cases || write_case) { /* no plugin runs: the cases alone */
    rc = print_case      ? conf_print_case(&c, stdout)
         : write_cases   ? conf_write_cases(&c, write_cases)
                         : conf_write_one_case(&c, write_case);
    rc = rc ? 1 : 0;
    goto done;
  }

  /* the plugin must open before anything else is worth running */
  conf_result r = {0};
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(&c, &lp, &inst, &r)) {
    fprintf(stderr, "coil-conformance: %s\n", r.msg);
    if (strstr(tiers, "abi")) { /* reported as the ABI tier's failure too */
      snprintf(r.tier, sizeof r.tier, "abi");
      snprintf(r.name, sizeof r.name, "load");
      snprintf(r.dtype, sizeof r.dtype, "-");
      snprintf(r.shape, sizeof r.shape, "-");
      r.nmse = -1;
      conf_record(&c, &r);
    }
  } else {
    char sampled[48] = "";
    if (c.sample > 1)
      snprintf(sampled, sizeof sampled, ", one op case in %d", c.sample);
    fprintf(stderr, "coil-conformance: plugin %s %s (%s), tiers %s, %d at a time%s\n", lp->api.name, lp->api.version,
            lp->path, tiers, c.jobs, sampled);
    conf_close(lp, inst);
    c.list_only = list;
    for (const char *t = tiers; *t;) {
      size_t len = strcspn(t, ",");
      if (len == 2 && strncmp(t, "op", 2) == 0)
        conf_tier_op(&c);
      else if (len == 5 && strncmp(t, "model", 5) == 0)
        conf_tier_model(&c);
      else if (len == 3 && strncmp(t, "abi", 3) == 0)
        conf_tier_abi(&c);
      else if (len == 4 && strncmp(t, "emit", 4) == 0)
        conf_tier_emit(&c);
      else if (len == 6 && strncmp(t, "random", 6) == 0)
        conf_tier_random(&c);
      t += len + (t[len] == ',');
    }
  }
  if (list)
    goto done;
  if (c.repro && c.nresults == 0) {
    fprintf(stderr, "coil-conformance: --repro: no case has the id '%s' (see --list)\n", c.exact_id);
    rc = 2;
  } else {
    conf_report_console(&c, stdout);
  }
  if (junit && conf_report_junit(&c, junit)) {
    fprintf(stderr, "coil-conformance: cannot write %s\n", junit);
    rc = 2;
  }
  if (csv && conf_report_csv(&c, csv)) {
    fprintf(stderr, "coil-conformance: cannot write %s\n", csv);
    rc = 2;
  }
  for (int i = 0; i < c.nresults && !rc; i++)
    if (c.results[i].status == CONF_FAIL)
      rc = 1;
done:
  conf_results_free(&c);
  free(k2), free(v2);
  coil_plugin_dirs_free(&c.dirs);
  coil_config_free(cfg);
  if (c.has_filter)
    regfree(&c.filter);
  return rc;
}
