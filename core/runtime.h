/* runtime.h — the plugin loader (core-internal): finds a backend plugin by name on a search
 * path or by file path, dlopens it, checks everything its entry hands back against the ABI
 * (coil/coil_plugin.h) before the first call, and wraps the calls into it so that a plugin's
 * error objects become coil_diag messages and are freed through the plugin.
 *
 * Every function that can fail writes one message into a coil_diag naming the plugin file and
 * what was expected. The helpers that call into a plugin return 0 on success and, on failure,
 * the negated coil_error_code (always < 0): -COIL_ERR_UNSUPPORTED tells "not supported" apart
 * from "wrong". Nothing here keeps global state; a loaded plugin may be used from several
 * threads as coil_plugin.h allows (compile concurrently, the rest serialized by the caller). */
#ifndef COIL_RUNTIME_H
#define COIL_RUNTIME_H

#include <stdbool.h>

#include "coil/base.h"
#include "coil/coil.h"
#include "coil/coil_plugin.h"

/* Receives the plugin's log lines: plugin is its name, message borrowed for the call. May be
 * called from several threads at once (concurrent compiles). */
typedef void (*coil_plugin_log_fn)(void *user, const char *plugin, coil_log_level level,
                                   const char *message);

typedef struct coil_loaded_plugin {
  coil_host_api host;       /* first: the table given to the plugin; host_log finds us from it */
  void *handle;             /* from dlopen; dlclose'd by coil_plugin_close */
  coil_plugin_api api;      /* the plugin's table copied up to its struct_size, the rest zero:
                               fields past what the plugin knows read as NULL. Its strings and
                               functions point into the library: valid until coil_plugin_close */
  size_t api_struct_size;   /* the struct_size the plugin declared (maybe > sizeof api) */
  char *path;               /* the file opened (owned) */
  char *label;              /* the plugin's name for messages, before and after the check */
  coil_plugin_log_fn log;   /* NULL: log lines are dropped */
  void *log_user;
} coil_loaded_plugin;

/* ---- finding and loading ---- */

/* Directories to look for plugins in, in order (owned strings). */
typedef struct coil_plugin_dirs {
  int n;
  char **dirs;
} coil_plugin_dirs;

/* The search path: the entries of config_plugin_path (the [coil] plugin_path option, ':'
 * separated; NULL if unset), then of the environment's COIL_PLUGIN_PATH (':' separated), then
 * builtin_dir (the build's or installation's plugin directory; NULL if none). Empty entries and
 * repeats are skipped (the config's effective plugin_path may come from COIL_PLUGIN_PATH too). */
void coil_plugin_dirs_init(coil_plugin_dirs *dirs, const char *config_plugin_path,
                           const char *builtin_dir);
void coil_plugin_dirs_free(coil_plugin_dirs *dirs);

/* Opens a plugin and checks its table. name_or_path is either a name ([a-z0-9_-]+), looked up
 * as libcoil_NAME.so in search_dirs in order (the first file that exists is the one opened: a
 * broken plugin is reported, never skipped for a later one), or a path to the library (it
 * contains '/' or ends in ".so"). The table is checked: entry present, non-NULL result, its
 * struct_size, ABI major equal, its host minor floor <= ours, required functions present,
 * metadata well-formed (name, vendor, semver, features, Wrapper IR range covering what we
 * write), and, when opened by name, the name it declares equal to the one asked for.
 * Returns 0 with *out set (free with coil_plugin_close), or -1 with *out NULL. */
int coil_plugin_open(const char *name_or_path, const char *const *search_dirs, int ndirs,
                     coil_loaded_plugin **out, coil_diag *d);
/* dlcloses the library. Every instance must have been destroyed first. NULL is a no-op. */
void coil_plugin_close(coil_loaded_plugin *lp);
/* Where the plugin's log lines go (set before the calls whose lines are wanted). */
void coil_plugin_set_log(coil_loaded_plugin *lp, coil_plugin_log_fn fn, void *user);

/* One plugin file found by coil_plugin_list. All pointers valid during the callback only. */
typedef struct coil_plugin_listing {
  const char *path;                 /* the file */
  const char *name;                 /* NAME from libcoil_NAME.so */
  const coil_loaded_plugin *plugin; /* opened and checked; NULL if that failed */
  const char *error;                /* why, when plugin is NULL */
  bool shadowed;                    /* an earlier directory has this name: open(name) would not
                                       pick this file */
} coil_plugin_listing;

/* Calls fn for every libcoil_*.so in dirs (in order; by file name within a directory), opened
 * and checked as coil_plugin_open does, then closed. Missing directories are skipped. Returns
 * the number of files listed. */
int coil_plugin_list(const char *const *dirs, int ndirs,
                     void (*fn)(void *user, const coil_plugin_listing *entry), void *user);

/* ---- calling into a plugin ---- */

/* The name of a coil_error_code: "INVALID_ARGUMENT", ...; "INTERNAL" for a code it does not
 * know (as the helpers treat one). */
const char *coil_plugin_error_name(int code);

/* create → *out (destroy it with coil_plugin_destroy). opts may be NULL. */
int coil_plugin_create(const coil_loaded_plugin *lp, const coil_plugin_options *opts,
                       coil_plugin **out, coil_diag *d);
void coil_plugin_destroy(const coil_loaded_plugin *lp, coil_plugin *inst);
coil_support coil_plugin_supports(const coil_loaded_plugin *lp, const coil_plugin *inst,
                                  const char *op, coil_dtype dtype);
/* Checks the program's Wrapper IR version against the plugin's range and verifies it (a plugin
 * is only ever handed a program that coil_wir_verify accepts), compiles into dir (which must
 * exist and be empty), and checks that the plugin wrote COIL_ARTIFACT_MANIFEST. The plugin gets
 * the program's text (ABI 1.3) and, unless it set COIL_FEATURE_PROGRAM_TEXT, the program too.
 * Safe to call from several threads at once on one instance with different programs and dirs. */
int coil_plugin_compile(const coil_loaded_plugin *lp, coil_plugin *inst,
                        const coil_wir_program *program, const char *dir,
                        const coil_plugin_options *opts, coil_diag *d);
/* -COIL_ERR_UNSUPPORTED, saying so, for a plugin that only emits. */
int coil_plugin_load(const coil_loaded_plugin *lp, coil_plugin *inst, const char *dir,
                     const coil_plugin_options *opts, coil_artifact **out, coil_diag *d);
int coil_plugin_run(const coil_loaded_plugin *lp, coil_artifact *art, int ninputs,
                    const coil_plugin_tensor *const *inputs, int noutputs,
                    const coil_plugin_tensor *const *outputs, coil_diag *d);
/* The same on the caller's stream when has_stream (ABI 1.2: queued there, no synchronize). */
int coil_plugin_run_stream(const coil_loaded_plugin *lp, coil_artifact *art, int ninputs,
                           const coil_plugin_tensor *const *inputs, int noutputs,
                           const coil_plugin_tensor *const *outputs, bool has_stream, void *stream,
                           coil_diag *d);
void coil_plugin_artifact_free(const coil_loaded_plugin *lp, coil_artifact *art);

/* ---- devices, memory, streams, events (ABI 1.4) ----
 * Thin wrappers: each returns 0 or a negated coil_error_code with the message in d. A plugin
 * without the group gives 0 devices and -COIL_ERR_UNSUPPORTED from the rest; the *_destroy,
 * *_free calls and syncs of an absent group do nothing. */
bool coil_plugin_has_devices(const coil_loaded_plugin *lp);
bool coil_plugin_has_streams(const coil_loaded_plugin *lp);
bool coil_plugin_has_events(const coil_loaded_plugin *lp);
int coil_plugin_device_count(const coil_loaded_plugin *lp, coil_plugin *inst);
/* *out is the host's (struct_size = sizeof); a missing or unprintable name reads
 * "(unnamed device)"; an alignment that is not a power of two >= 16 is an error. */
int coil_plugin_device_info(const coil_loaded_plugin *lp, coil_plugin *inst, int device,
                            coil_device_info *out, coil_diag *d);
int coil_plugin_mem_alloc(const coil_loaded_plugin *lp, coil_plugin *inst, int device,
                          size_t bytes, void **out, coil_diag *d);
void coil_plugin_mem_free(const coil_loaded_plugin *lp, coil_plugin *inst, int device, void *ptr);
/* stream NULL: synchronous. */
int coil_plugin_mem_copy(const coil_loaded_plugin *lp, coil_plugin *inst, coil_copy_kind kind,
                         int device, void *dst, const void *src, size_t bytes,
                         coil_stream *stream, coil_diag *d);
int coil_plugin_stream_create(const coil_loaded_plugin *lp, coil_plugin *inst, int device,
                              coil_stream **out, coil_diag *d);
/* Errors of work queued earlier come back here, named "stream_sync (work queued earlier)". */
int coil_plugin_stream_sync(const coil_loaded_plugin *lp, coil_plugin *inst, coil_stream *stream,
                            coil_diag *d);
void coil_plugin_stream_destroy(const coil_loaded_plugin *lp, coil_plugin *inst,
                                coil_stream *stream);
int coil_plugin_event_record(const coil_loaded_plugin *lp, coil_plugin *inst, coil_stream *stream,
                             coil_event **out, coil_diag *d);
int coil_plugin_event_wait(const coil_loaded_plugin *lp, coil_plugin *inst, coil_stream *stream,
                           coil_event *event, coil_diag *d);
int coil_plugin_event_sync(const coil_loaded_plugin *lp, coil_plugin *inst, coil_event *event,
                           coil_diag *d);
void coil_plugin_event_destroy(const coil_loaded_plugin *lp, coil_plugin *inst,
                               coil_event *event);

/* Describes a host tensor (contiguous, on the CPU) for run: strides is caller storage of
 * COIL_MAX_RANK entries that out points into, as it does into t. */
void coil_plugin_tensor_wrap(const coil_tensor *t, int64_t *strides, coil_plugin_tensor *out);

#endif
