/* tier_emit.c — the emit tier, for plugins that only emit code (COIL_FEATURE_EMITS_ONLY: an FX
 * exporter, HIP on a machine without a GPU): every model of conformance/models is compiled and
 * each generated source is checked by the real toolchain where it is installed — Python files
 * by `python3 -m py_compile`, HIP by `hipcc --genco`, CUDA by `nvcc --cubin`, C by
 * `cc -fsyntax-only` — and reported "skipped: toolchain absent" where it is not. A plugin that
 * executes is checked by running (op and model tiers): this tier skips it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "artifact.h"
#include "conf.h"

/* Whether `tool` is an executable on PATH. */
static bool
on_path(const char *tool)
{
  const char *path = getenv("PATH");
  char buf[1024];
  for (const char *s = path ? path : "/usr/bin:/bin"; *s;) {
    const char *e = strchr(s, ':');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    snprintf(buf, sizeof buf, "%.*s/%s", (int)n, s, tool);
    if (access(buf, X_OK) == 0)
      return true;
    s += n + (e ? 1 : 0);
  }
  return false;
}

/* Runs argv (no shell) with its output into log; its exit status (or -1). fork and exec, not
 * posix_spawn: core/sched.h, on this target's include path, hides the system's <sched.h>. */
static int
run_tool(char *const *argv, const char *log)
{
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execvp(argv[0], argv);
    _exit(127);
  }
  int status;
  if (waitpid(pid, &status, 0) < 0)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

typedef struct {
  const char *ext, *tool;
  const char *argv[8]; /* FILE and OUT substituted */
} checker;

static const checker checkers[] = {
    {".py", "python3", {"python3", "-m", "py_compile", "FILE", NULL}},
    {".hip", "hipcc", {"hipcc", "--genco", "--offload-arch=gfx90a", "FILE", "-o", "OUT", NULL}},
    {".cu", "nvcc", {"nvcc", "--cubin", "-arch=sm_90", "FILE", "-o", "OUT", NULL}},
    {".c", "cc", {"cc", "-fsyntax-only", "FILE", NULL}},
};

/* Checks every generated source in dir; 0 all good, 1 something skipped (msg), -1 a failure. */
static int
check_dir(const char *dir, char *msg, size_t n)
{
  DIR *dp = opendir(dir);
  if (!dp) {
    snprintf(msg, n, "%s: %s", dir, strerror(errno));
    return -1;
  }
  int rc = 0, checked = 0;
  struct dirent *e;
  while ((e = readdir(dp)) && rc >= 0) {
    size_t len = strlen(e->d_name);
    for (size_t k = 0; k < sizeof checkers / sizeof *checkers; k++) {
      const checker *ck = &checkers[k];
      size_t el = strlen(ck->ext);
      if (len <= el || strcmp(e->d_name + len - el, ck->ext) != 0)
        continue;
      if (!on_path(ck->tool)) {
        snprintf(msg, n, "skipped: toolchain absent (%s for %.200s)", ck->tool, e->d_name);
        rc = 1;
        break;
      }
      char file[1024], out[1100], log[1100];
      snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
      snprintf(out, sizeof out, "%s.out", file);
      snprintf(log, sizeof log, "%s.log", file);
      char *argv[8];
      for (int a = 0; a < 8; a++)
        argv[a] = !ck->argv[a] ? NULL : strcmp(ck->argv[a], "FILE") == 0 ? file : strcmp(ck->argv[a], "OUT") == 0 ? out
                                                                                                               : (char *)ck->argv[a];
      if (run_tool(argv, log) != 0) {
        FILE *f = fopen(log, "r"); /* the first line that says "error", else the first line */
        char first[200] = "", line[200];
        while (f && fgets(line, sizeof line, f)) {
          if (!first[0] || strstr(line, "rror")) {
            memcpy(first, line, sizeof first);
            if (strstr(line, "rror"))
              break;
          }
        }
        if (f)
          fclose(f);
        first[strcspn(first, "\n")] = 0;
        snprintf(msg, n, "%s rejects %s: %s", ck->tool, e->d_name, first);
        rc = -1;
      }
      checked++;
      break;
    }
  }
  closedir(dp);
  if (rc == 0 && !checked) {
    snprintf(msg, n, "the plugin wrote no source a known toolchain checks (.py .hip .cu .c)");
    return 1;
  }
  return rc;
}

static void
run_emit(const conf_ctx *c, int i, void *user, conf_result *r)
{
  char **graphs = user;
  coil_diag d = {0};
  coil_loaded_plugin *lp = NULL;
  coil_plugin *inst = NULL;
  coil_wir_program *p = NULL;
  char dir[] = "/tmp/coil-conformance-XXXXXX";
  bool have_dir = false;
  r->status = CONF_FAIL;
  r->nmse = -1;
  coil_graph *g = coil_graph_load(graphs[i], &d);
  if (conf_open(c, &lp, &inst, r))
    goto done;
  if (!g || !(p = conf_compile(c, lp, inst, g, &d))) {
    snprintf(r->msg, sizeof r->msg, "%.400s", d.msg);
    goto done;
  }
  if (!mkdtemp(dir)) {
    snprintf(r->msg, sizeof r->msg, "mkdtemp: %s", strerror(errno));
    goto done;
  }
  have_dir = true;
  coil_plugin_options o = conf_options(c);
  int rc = coil_plugin_compile(lp, inst, p, dir, &o, &d);
  if (rc == -COIL_ERR_UNSUPPORTED) {
    r->status = CONF_UNSUPPORTED;
    snprintf(r->msg, sizeof r->msg, "%.400s", d.msg);
  } else if (rc) {
    snprintf(r->msg, sizeof r->msg, "%.400s", d.msg);
  } else {
    rc = check_dir(dir, r->msg, sizeof r->msg);
    r->status = rc < 0 ? CONF_FAIL : rc ? CONF_SKIP : CONF_PASS;
  }
done:
  if (lp)
    conf_close(lp, inst);
  if (have_dir)
    coil_artifact_remove(dir);
  coil_wir_free(p);
  coil_graph_free(g);
}

void
conf_tier_emit(conf_ctx *c)
{
  conf_result r = {.tier = "emit", .name = "emit", .dtype = "-", .shape = "-", .status = CONF_SKIP, .nmse = -1};
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  if (conf_open(c, &lp, &inst, &r)) {
    conf_record(c, &r);
    return;
  }
  bool emits = lp->api.features & COIL_FEATURE_EMITS_ONLY;
  conf_close(lp, inst);
  if (!emits) {
    if (conf_selected(c, "emit", "emit", "-", "-")) {
      r.status = CONF_SKIP;
      snprintf(r.msg, sizeof r.msg, "skipped: the plugin executes (the op and model tiers run its code)");
      conf_record(c, &r);
    }
    return;
  }
  char root[512];
  snprintf(root, sizeof root, "%s/conformance/models", c->source_dir);
  DIR *dp = opendir(root);
  char **graphs = NULL;
  int n = 0;
  conf_result *res = NULL;
  struct dirent *e;
  while (dp && (e = readdir(dp))) {
    if (e->d_name[0] == '.' || !conf_selected(c, "emit", e->d_name, "-", "-"))
      continue;
    graphs = realloc(graphs, sizeof *graphs * (size_t)(n + 1));
    res = realloc(res, sizeof *res * (size_t)(n + 1));
    size_t len = strlen(root) + strlen(e->d_name) + 16;
    graphs[n] = malloc(len);
    snprintf(graphs[n], len, "%s/%s/graph.coil", root, e->d_name);
    memset(&res[n], 0, sizeof res[n]);
    snprintf(res[n].tier, sizeof res[n].tier, "emit");
    snprintf(res[n].name, sizeof res[n].name, "%.90s", e->d_name);
    snprintf(res[n].dtype, sizeof res[n].dtype, "-");
    snprintf(res[n].shape, sizeof res[n].shape, "-");
    n++;
  }
  if (dp)
    closedir(dp);
  for (int a = 0; a < n; a++) /* in name order, as the model tier */
    for (int b = a + 1; b < n; b++)
      if (strcmp(graphs[b], graphs[a]) < 0) {
        char *t = graphs[a];
        graphs[a] = graphs[b], graphs[b] = t;
        conf_result t2 = res[a];
        res[a] = res[b], res[b] = t2;
      }
  if (n)
    conf_run_cases(c, n, run_emit, graphs, res);
  for (int i = 0; i < n; i++)
    free(graphs[i]);
  free(graphs);
  free(res);
}
