/* conf.h — the conformance suite's internals (coil-conformance): a result per case, the
 * context every tier reads, the process pool that runs cases, and the reports.
 *
 * Every case runs in a child process of its own (fork), so a plugin that crashes, hangs or
 * corrupts memory fails that case and nothing else; -j N runs N at a time. A case's function
 * fills a conf_result in the child, which writes it back through a pipe. */
#ifndef COIL_CONF_H
#define COIL_CONF_H

#include <regex.h>
#include <stdbool.h>

#include "backend.h"
#include "runtime.h"

typedef enum conf_status {
  CONF_PASS,
  CONF_FAIL,
  CONF_UNSUPPORTED, /* the plugin does not claim what the case needs: reported, not failed */
  CONF_SKIP,        /* the case cannot run here (toolchain absent, tier not for this plugin) */
} conf_status;

const char *conf_status_name(conf_status s); /* "pass", "FAIL", "not supported", "skipped" */

typedef struct conf_result {
  char tier[8];      /* op, model, abi, emit, random */
  char name[96];     /* the op (aten.add.Tensor), model or check */
  char dtype[8];     /* f32 ... or "-" */
  char shape[24];    /* the shape class (odd1d, permuted, ...) or "-" */
  conf_status status;
  double nmse;       /* worst normalised mean squared error over the outputs; -1 if none */
  double seconds;
  char msg[480];     /* why it failed, was skipped, or is not supported */
} conf_result;

typedef struct conf_ctx {
  const char *plugin;          /* name or path, as given */
  coil_plugin_dirs dirs;       /* where a name is looked up */
  int noptions;                /* the plugin's options from the ini file */
  const char *const *option_keys;
  const char *const *option_values;
  bool has_filter;
  regex_t filter;              /* cases whose "tier/name/dtype/shape" does not match are left out */
  int jobs;                    /* cases at a time */
  int sample;                  /* > 1: the op tier runs one case in this many of each overload */
  int timeout_s;               /* per case */
  bool verbose;                /* a line per case as it finishes */
  bool list_only;              /* print the ids of the cases instead of running them */
  const char *source_dir;      /* where conformance/models lives */
  const char *convolution;     /* [coil] convolution of the ini file: auto, generated, library */
  const char *attention;       /* [coil] attention: the same choices, for coil.attention */
  const char *matmul;          /* [coil] matmul: the same choices, for mm, bmm and addmm */
  const char *decompose_k;     /* [coil] decompose_k: auto, off or a slice count */
  uint64_t random_seed;        /* the random tier: graph i comes from seed random_seed + i */
  long random_count;           /* graphs to run */
  int random_batch;            /* graphs compiled together as one program */
  double random_time_s;        /* > 0: run graphs until this much time has passed instead */
  const char *exact_id;        /* --repro/--write-case: only the case of this id */
  bool repro;                  /* --repro: run in the foreground, printing the case's details */
  conf_result *results;        /* every finished case, in the order given */
  char **errs;                 /* per result: the end of what its process wrote to stderr, or NULL */
  int nresults, cap;
} conf_ctx;

/* The id a filter matches: "tier/name/dtype/shape". */
void conf_case_id(const conf_result *r, char *out, size_t n);
bool conf_selected(const conf_ctx *c, const char *tier, const char *name, const char *dtype,
                   const char *shape);

/* Runs fn(c, job i, result) for i in 0..n-1, each in a child process, c->jobs at a time;
 * results[i] arrive with the identity fields the caller set. A child that dies, or runs past
 * c->timeout_s, fails its case with the reason. The results are appended to c->results. */
typedef void (*conf_case_fn)(const conf_ctx *c, int i, void *user, conf_result *r);
void conf_run_cases(conf_ctx *c, int n, conf_case_fn fn, void *user, conf_result *results);

/* Appends one result (a case that needed no process of its own); err, if not NULL, is what
 * the case wrote to stderr (copied). */
void conf_record(conf_ctx *c, const conf_result *r);
void conf_record_err(conf_ctx *c, const conf_result *r, const char *err);
/* Frees c's results and their stderr texts (a copy of a context that ran cases of its own). */
void conf_results_free(conf_ctx *c);
/* A case's stderr, indented under its line in a report. */
void conf_print_err(FILE *f, const char *err);

/* The plugin options as a coil_plugin_options (borrowed from c). */
coil_plugin_options conf_options(const conf_ctx *c);
/* Opens the plugin and creates an instance; on failure fills r (FAIL) and returns -1. */
int conf_open(const conf_ctx *c, coil_loaded_plugin **lp, coil_plugin **inst, conf_result *r);
void conf_close(coil_loaded_plugin *lp, coil_plugin *inst);
/* The core's program of g for this plugin: library ops it claims (after [coil] convolution) are
 * library calls, the rest generated. NULL with the reason in d. */
coil_wir_program *conf_compile(const conf_ctx *c, const coil_loaded_plugin *lp, const coil_plugin *inst,
                               const coil_graph *g, coil_diag *d);
/* A case's program in the plugin: compiled by the core, checked against the plugin's claims,
 * compiled by the plugin into a temporary directory and loaded (conf_prepare), released with
 * conf_release (which takes one that failed half way too). */
typedef struct conf_prepared {
  coil_loaded_plugin *lp;
  coil_plugin *inst;
  coil_wir_program *p;
  coil_artifact *art;
  char dir[32];                /* "" when none was made */
} conf_prepared;

/* 0 when the artifact is loaded; otherwise r holds the status (FAIL, or UNSUPPORTED for what
 * the plugin does not claim or refuses as such, or SKIP for a plugin that only emits) and why.
 * what names the graph in messages ("case", "model"). */
int conf_prepare(const conf_ctx *c, const coil_graph *g, const char *what, conf_prepared *x, conf_result *r);
void conf_release(conf_prepared *x);

/* Whether the plugin claims everything program p needs (every kernel op and reduction kind at
 * its dtype, every library op); if not, every distinct thing it lacks, as a list, in why. */
bool conf_program_supported(const coil_loaded_plugin *lp, const coil_plugin *inst,
                            const coil_wir_program *p, char *why, size_t n);
/* Compares got with want by NMSE (floats; threshold per dtype), exactly (integers, bool), with
 * NaN and Inf positions equal. Returns true if they agree; *nmse is the value found; msg says
 * what differs. */
bool conf_compare(const coil_tensor *got, const coil_tensor *want, double *nmse, char *msg, size_t n);
/* One element where got and want differ: its flat index (row-major over want's shape), the
 * values, and the absolute and relative error (rel: |got-want| / max(|want|, 1e-30)). */
typedef struct conf_elem {
  int64_t index;
  double got, want, abs, rel;
  bool special; /* a NaN/Inf mismatch or an integer mismatch: ranked before any float error */
} conf_elem;
/* The k worst elements of got against want (same shape), worst first; how many were found. */
int conf_worst(const coil_tensor *got, const coil_tensor *want, int k, conf_elem *out);
/* "[i, j, k]" of a flat index over t's shape. */
void conf_index_text(const coil_tensor *t, int64_t flat, char *out, size_t n);
/* Prints the k worst elements as a table (for --repro). */
void conf_print_worst(FILE *f, const coil_tensor *got, const coil_tensor *want, int k);
/* The NMSE threshold of a dtype. */
double conf_nmse_max(coil_dtype t);
/* A random tensor: floats ~ N(0,1) (positive ones in [0.25, 2.25) when positive), integers in
 * [lo, hi), bools fair. */
void conf_random(coil_tensor *t, uint64_t *seed, bool positive, int64_t lo, int64_t hi);

/* The tiers: each appends its cases' results to c. */
void conf_tier_op(conf_ctx *c);
void conf_tier_model(conf_ctx *c);
void conf_tier_abi(conf_ctx *c);
void conf_tier_emit(conf_ctx *c);
void conf_tier_random(conf_ctx *c); /* tier_random.c */
void conf_print_random(const conf_ctx *c, FILE *f); /* --print-case --tier random */

/* Reports. */
void conf_report_console(const conf_ctx *c, FILE *f);
int conf_report_junit(const conf_ctx *c, const char *path);
int conf_report_csv(const conf_ctx *c, const char *path);

#endif
