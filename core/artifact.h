/* artifact.h — compiled artifacts that outlive the process (core-internal): `coil compile GRAPH
 * --backend NAME -o DIR` writes one, `coil run DIR` runs one without the graph and without
 * recompiling, and the compile cache (cache.h) keeps one per key.
 *
 * An artifact is a directory holding what the plugin's compile wrote (its manifest.json, see
 * coil_plugin.h) plus the host's own files, whose names the plugin must not use:
 *
 *   coil.wir             the program's text (coil_wir_print): the input signature, the size
 *                        symbols and the output sizes the host needs to run it
 *   weights.safetensors  the graph's params, when embedded at compile time (optional)
 *   coil.json            the host manifest, written last: format and coil version, graph name,
 *                        plugin name and version, Wrapper IR version, plugin options, input and
 *                        output signatures, the embedded weights' names, and per file its size
 *                        and XXH3-128 hash, with a content hash over them all
 *
 * A writer builds the whole directory under a temporary hidden sibling name and renames it into
 * place, so a crash leaves either nothing or a complete artifact, never half of one. Opening an
 * artifact checks every file against coil.json first: a file changed, missing or added since is
 * an error naming it. Every fallible function returns -1 with a message in *d. */
#ifndef COIL_ARTIFACT_H
#define COIL_ARTIFACT_H

#include <stdbool.h>

#include "coil/coil.h"
#include "runtime.h"

#define COIL_ARTIFACT_FORMAT 1                   /* of coil.json; bumped on incompatible change */
#define COIL_ARTIFACT_HOST_MANIFEST "coil.json"
#define COIL_ARTIFACT_PROGRAM "coil.wir"
#define COIL_ARTIFACT_WEIGHTS "weights.safetensors"
#define COIL_ARTIFACT_MAC "coil.mac"               /* cache entries: the keyed hash (below) */
#define COIL_ARTIFACT_MAC_KEY_BYTES 32

/* How far an artifact directory is trusted before anything in it is read for real.
 *
 * Every directory and file of an artifact is opened relative to the artifact's own directory
 * descriptor, one component at a time, never following a symlink (a symlink anywhere in it is
 * an error), and each is fstat'ed once open: the checks below apply to the object that is then
 * read, not to a name that could be swapped after the check.
 *
 * owned (cache entries): every directory and file is owned by this user and nobody else may
 * write to it (no group or other write bit). Otherwise (an artifact from `coil compile -o`,
 * maybe someone else's) only a component that anyone may write to (o+w) is refused.
 *
 * mac_key (cache entries): the directory holds coil.mac, the keyed BLAKE2b (libsodium's
 * crypto_generichash, 32-byte key and output) of every recorded file (path, bytes, length) in
 * coil.json's order and then of coil.json itself; it must match before the entry is used, so
 * a file planted or edited by anyone without the key (even with coil.json re-hashed) is refused.
 * NULL: no coil.mac is needed (an AOT artifact; coil checks its integrity, not who made it). */
typedef struct coil_artifact_trust {
  bool owned;
  const unsigned char *mac_key;
} coil_artifact_trust;

/* What coil_artifact_write records beyond the program; every field may be zero/NULL. */
typedef struct coil_artifact_write_opts {
  const char *graph_name;            /* NULL: the program's name */
  int noutput_names;                 /* the graph's output names (for summaries), in order; */
  const char *const *output_names;   /* NULL: none recorded ("out0", ... are used) */
  const char *embed_weights;         /* a safetensors file: its tensors named like a param
                                        input of the program are checked against the input's
                                        type and stored as weights.safetensors; NULL: none */
  const char *cache_key;             /* recorded as "cache_key" (cache entries) */
  bool replace;                      /* dir is an artifact already: replace it; else keep it and
                                        return 1 (a concurrent writer of the same cache entry) */
  bool private_dir;                  /* mode 0700 and every file 0600/0700 whatever the umask
                                        (the cache); else 0777 less the umask */
  const unsigned char *mac_key;      /* COIL_ARTIFACT_MAC_KEY_BYTES: write coil.mac (cache) */
  bool no_fsync;                     /* skip the durability step (the cache: every open rehashes
                                        each file, so an entry a crash left torn fails its check
                                        and is compiled again; 11 fsyncs cost 3-5 ms a compile) */
} coil_artifact_write_opts;

/* Compiles p with the plugin instance into a temporary sibling of dir, adds coil.wir, the
 * embedded weights and coil.json, and renames the result to dir. dir may be missing, an empty
 * directory, or (with o->replace) an artifact; anything else there is an error and is left
 * alone. o may be NULL. Returns 0 when written, 1 when dir was an artifact already and
 * !o->replace (nothing written), -1 on error (nothing left behind). */
int coil_artifact_write(const coil_loaded_plugin *lp, coil_plugin *inst, const coil_wir_program *p,
                        const coil_plugin_options *opts, const coil_artifact_write_opts *o,
                        const char *dir, coil_diag *d);

/* The program's output line (the last line of kind output), or NULL when it has none. */
const coil_line *coil_program_output_line(const coil_wir_program *p);

/* Whether path is a directory holding coil.json (an artifact, maybe a damaged one). */
bool coil_artifact_is(const char *path);

/* Checks dir's integrity only: coil.json is there, of a format this coil reads, and every file
 * of the directory has the size and hash it records (none missing, none added), under the
 * trust of an AOT artifact (coil_artifact_trust with owned false, no key). */
int coil_artifact_verify(const char *dir, coil_diag *d);

/* An artifact opened for running: verified, its program parsed and verified, its embedded
 * weights read. Everything is owned by it (coil_artifact_close). */
typedef struct coil_stored_artifact {
  char *dir;                 /* the name it was opened by (for messages) */
  int fd;                    /* the directory that was checked, open until close */
  char load_path[48];        /* the name to hand to the plugin: /proc/self/fd/N of fd, so that
                                what is loaded is the directory checked, whatever its name
                                points to by then (dir where /proc is not mounted) */
  char *coil_version;        /* of the coil that wrote it */
  char *graph;               /* the graph's name */
  char *plugin;              /* the plugin's name and version at compile time */
  char *plugin_version;
  char *cache_key;           /* NULL unless a cache entry */
  coil_wir_program *program; /* from coil.wir */
  int noutputs;              /* == the program's outputs */
  char **output_names;       /* the graph's output names, or "out0", ... when not recorded */
  coil_tensor_list weights;  /* embedded params (empty when none) */
} coil_stored_artifact;

/* Opens dir (following a symlink in the name given, as for any file the user names) as an
 * AOT artifact. Beyond coil_artifact_verify: a program.wir of the plugin's (every built-in
 * plugin keeps the program it compiled there) must be the program of coil.wir, so an edited
 * coil.wir cannot disagree with the code about the sizes of inputs and outputs. */
int coil_artifact_open(const char *dir, coil_stored_artifact **out, coil_diag *d);
/* The same on an open directory (dirfd borrowed; the artifact keeps its own duplicate) under
 * the given trust; dir names it in messages. */
int coil_artifact_open_at(int dirfd, const char *dir, const coil_artifact_trust *t,
                          coil_stored_artifact **out, coil_diag *d);
void coil_artifact_close(coil_stored_artifact *a); /* NULL is a no-op */

/* Runs an opened artifact: opens its plugin by name on the search path (dirs), checks that it
 * has the name and version recorded at compile time ("artifact was compiled by cpu 0.1.0; the
 * plugin found is cpu 0.2.0: recompile"), creates an instance with opts, loads the artifact,
 * binds the inputs by label (params not in `inputs` from the embedded weights), runs, and tears
 * down. The outputs are out0, out1, ... */
int coil_artifact_run(const coil_stored_artifact *a, const char *const *dirs, int ndirs,
                      const coil_plugin_options *opts, const coil_tensor_list *inputs,
                      coil_tensor_list *outputs, coil_diag *d);

/* One run of a loaded plugin artifact of program p (shared by coil_artifact_run and
 * backend.c): binds each program input by label from `inputs`, else (params only) from
 * `weights` (may be NULL), checks its dtype and sizes against the program, binds the size
 * symbols, allocates the outputs at the sizes the program gives them, and runs. */
int coil_artifact_exec(const coil_loaded_plugin *lp, coil_plugin *inst, coil_artifact *art,
                       const coil_wir_program *p, const coil_tensor_list *inputs,
                       const coil_tensor_list *weights, coil_tensor_list *outputs, coil_diag *d);

/* What the conformance suite checks around a run (coil_artifact_exec_checked). */
typedef struct coil_exec_checks {
  int input_offset;  /* > 0: each input is handed over as a copy starting this many elements
                        past a 64-byte boundary (an unaligned start) */
  int guard_bytes;   /* > 0: each output lies between this many guard bytes on either side,
                        and its elements start as a NaN/0xff pattern; after the run a guard
                        byte that changed fails the run with COIL_EXEC_GUARD */
} coil_exec_checks;

/* The return value of coil_artifact_exec_checked when the plugin wrote outside an output. */
#define COIL_EXEC_GUARD (-100)

/* coil_artifact_exec with the checks in *chk (NULL: none). Returns 0, -1 (the run failed:
 * message in d), a negated coil_error_code from the plugin, or COIL_EXEC_GUARD.
 * inst: the instance that loaded art. When its plugin has devices (ABI 1.4) and device 0 is not
 * host-visible, inputs and outputs (with their unaligned starts and guard bytes) are copied to
 * device memory from mem_alloc, the run is queued on a stream of the plugin's when it has
 * streams and synchronized (queued errors surface there), and the outputs are copied back. */
int coil_artifact_exec_checked(const coil_loaded_plugin *lp, coil_plugin *inst, coil_artifact *art,
                               const coil_wir_program *p, const coil_tensor_list *inputs,
                               const coil_tensor_list *weights, const coil_exec_checks *chk,
                               coil_tensor_list *outputs, coil_diag *d);

/* Seals the artifact directory dfd (dir in messages) as a cache entry: checks it as one
 * (owned, every file as coil.json records it, none added) and writes coil.mac, the keyed hash
 * under mac_key (the remote cache installs entries fetched from Redis so). */
int coil_artifact_seal_at(int dfd, const char *dir, const unsigned char *mac_key, coil_diag *d);

/* Removes dir and everything under it (no symlink is followed). Missing dir is no error. */
void coil_artifact_remove(const char *dir);
/* The same for name relative to the directory dirfd (AT_FDCWD: the working directory). */
void coil_artifact_remove_at(int dirfd, const char *name);

/* "/proc/self/fd/N" for fd into out (size >= 48), or `fallback` where /proc is not mounted. */
void coil_fd_path(int fd, const char *fallback, char *out, size_t size);

#endif
