/* coil_plugin.h — the plugin ABI: the one header a coil backend plugin includes.
 *
 * A plugin is a shared library (libcoil_NAME.so) that exports one symbol, coil_plugin_entry.
 * The host dlopens it, calls the entry with its ABI version and a table of host services, and
 * gets back a const table of the plugin's metadata and functions. Through that table the host
 * creates an instance, has it compile Wrapper IR programs (coil/wir.h) into artifact
 * directories, and, for plugins that execute, loads an artifact and runs it. docs/plugin-abi.md
 * is the reference with examples; this header is the contract.
 *
 * The rules (after the PJRT C API, ggml backends, ONNX Runtime plugin EPs and SQLite's VFS):
 *
 *  - struct_size. Every table and argument struct starts with `size_t struct_size`, set by the
 *    side that fills it in to sizeof the struct as that side was built. Structs only grow at the
 *    end, never reorder or change a field. The reader reads a field only if it lies within
 *    struct_size (COIL_STRUCT_HAS) and treats a field beyond it as zero/NULL. Arrays of structs
 *    are passed as arrays of pointers, so a struct that grows never changes an array's stride.
 *
 *  - Versions. COIL_PLUGIN_ABI_MAJOR.COIL_PLUGIN_ABI_MINOR. A minor release only appends fields
 *    and functions; a major release breaks. Host and plugin are compatible when the majors are
 *    equal and the host's minor is at least the plugin's stated floor (min_host_minor). Nothing
 *    ever requires an exact match: a 1.3 plugin loads in a 1.0 host (which reads the 1.0 prefix
 *    of its table) if it says it can do with 1.0, and a 1.0 plugin loads in a 1.3 host.
 *
 *  - Required and optional. Functions marked [required] are never NULL in a valid table (the host
 *    refuses to load a plugin otherwise). [optional] ones may be NULL, and the host checks before
 *    every call. Optional functions of the host table are checked the same way by the plugin.
 *
 *  - Errors. Every fallible call returns a `coil_error *`: NULL means success, anything else is
 *    an opaque object made by the plugin, with a code and a message, read only through the
 *    plugin's error_code/error_message and released only through its error_free. A plugin never
 *    aborts, exits, raises a signal on purpose, or longjmps out of a call; on out-of-memory it
 *    returns a COIL_ERR_OUT_OF_MEMORY error (a static object whose error_free does nothing is
 *    the usual way to have one that needs no memory).
 *
 *  - Ownership. Next to every pointer: who owns it and how long it stays valid. "Borrowed for
 *    the call" means the callee may read it until the call returns and must copy what it keeps.
 *
 *  - Threads. The host may call compile on one instance from several threads at once, each on a
 *    different program and artifact directory; a plugin makes that safe (no mutable globals, or
 *    locked ones). Every other call on an instance (create, supports, load, destroy) and every
 *    call on one artifact (run, artifact_free) is serialized by the host; different artifacts
 *    may run on different threads at once. error_* functions may be called from any thread, and
 *    so may the device, memory, stream and event functions (1.4) on one instance.
 *
 * The lifecycle, every step but the first and last through the tables below:
 *
 *   dlopen → coil_plugin_entry → create(options) → compile(program, dir, options) ...
 *          → load(dir) → run(artifact, inputs, outputs) ... → artifact_free → destroy → dlclose
 *
 * A plugin whose device memory the host cannot touch (1.4) also lists its devices and gives the
 * host their memory: the host then copies each run's inputs in and outputs out through it.
 *
 * Everything here is C11 and plain data; the only symbol a plugin exports is coil_plugin_entry. */
#ifndef COIL_PLUGIN_H
#define COIL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "coil/base.h" /* coil_dtype */
#include "coil/wir.h"  /* coil_wir_program */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions ---- */

#define COIL_PLUGIN_ABI_MAJOR 1
#define COIL_PLUGIN_ABI_MINOR 4

#define COIL_PLUGIN_ENTRY_SYMBOL "coil_plugin_entry"

/* The file compile must write into the artifact directory, last (its presence marks the
 * artifact complete): a JSON object with at least "plugin" (the plugin's name),
 * "plugin_version" (its semver), "wir_version" ("MAJOR.MINOR" of the program compiled) and
 * "files" (the other files it wrote, relative to the directory). */
#define COIL_ARTIFACT_MANIFEST "manifest.json"

/* Bytes of `type` up to and including `field`. */
#define COIL_STRUCT_SIZE_TO(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* Whether `field` of the struct at ptr (of type `type`) lies within its struct_size, i.e. the
 * writer knew that field. A field that is not there reads as zero/NULL. For optional
 * functions: COIL_STRUCT_HAS(host, coil_host_api, log) && host->log. */
#define COIL_STRUCT_HAS(ptr, type, field) \
  ((ptr) != NULL && (ptr)->struct_size >= COIL_STRUCT_SIZE_TO(type, field))

/* Export only the entry; build plugins with -fvisibility=hidden (coil_add_plugin does). */
#if defined(__GNUC__) || defined(__clang__)
#define COIL_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define COIL_PLUGIN_EXPORT
#endif

/* ---- errors ---- */

/* What went wrong, for the host to decide what to report. Values are fixed forever; new codes
 * are appended. A host treats a code it does not know as COIL_ERR_INTERNAL. */
typedef enum coil_error_code {
  COIL_ERR_INVALID_ARGUMENT = 1, /* bad option (unknown key, bad value), bad tensor, bad dir */
  COIL_ERR_UNSUPPORTED = 2,      /* well-formed, but this plugin does not do it (an op, dtype,
                                    device, feature): "not supported", not "wrong" */
  COIL_ERR_COMPILE_FAILED = 3,   /* the toolchain rejected generated code */
  COIL_ERR_RUNTIME = 4,          /* a kernel or device call failed while running */
  COIL_ERR_OUT_OF_MEMORY = 5,    /* host or device memory */
  COIL_ERR_INTERNAL = 6,         /* a broken invariant inside the plugin: a plugin bug */
  COIL_ERR_VERSION = 7,          /* version skew: program, artifact or host too old or too new */
  COIL_ERR_IO = 8,               /* reading or writing the artifact directory */
} coil_error_code;

/* Defined by each plugin as it likes; the host only passes the pointer back. */
typedef struct coil_error coil_error;

/* ---- other opaque objects, defined by the plugin ---- */

typedef struct coil_plugin coil_plugin;     /* an instance: create → destroy */
typedef struct coil_artifact coil_artifact; /* a loaded artifact: load → artifact_free */
typedef struct coil_stream coil_stream;     /* 1.4: a queue of work on one device:
                                               stream_create → stream_destroy */
typedef struct coil_event coil_event;       /* 1.4: a point in a stream: event_record →
                                               event_destroy */

/* ---- plain values ---- */

typedef enum coil_log_level {
  COIL_LOG_DEBUG = 0, COIL_LOG_INFO = 1, COIL_LOG_WARN = 2, COIL_LOG_ERROR = 3,
} coil_log_level;

/* features: what the plugin does (bits; unknown bits are ignored by the host). Exactly one of
 * EXECUTES and EMITS_ONLY is set. A plugin that executes only where its device exists (hip)
 * probes in coil_plugin_entry and returns the table that fits the machine. */
#define COIL_FEATURE_EXECUTES      (UINT64_C(1) << 0) /* load and run are present */
#define COIL_FEATURE_EMITS_ONLY    (UINT64_C(1) << 1) /* compile writes code; no load or run */
#define COIL_FEATURE_GRAPH_CAPTURE (UINT64_C(1) << 2) /* a run can replay a captured device
                                                         graph (mode = reduce-overhead) */
#define COIL_FEATURE_AUTOTUNE      (UINT64_C(1) << 3) /* compile can benchmark kernel configs
                                                         (mode = max-autotune) */
#define COIL_FEATURE_PROGRAM_TEXT  (UINT64_C(1) << 4) /* 1.3: compile reads the program from
                                                         args->program_text only; the host then
                                                         passes program = NULL (see
                                                         coil_plugin_compile_args) */

/* wir_max_minor meaning "every minor of wir_major" (for plugins that trust minor releases of the
 * Wrapper IR to add only what they may ignore). */
#define COIL_WIR_ANY_MINOR UINT32_MAX

/* Answer of supports(). Values fixed forever. */
typedef enum coil_support {
  COIL_UNSUPPORTED = 0,
  COIL_SUPPORTED = 1,
} coil_support;

/* Where a tensor's data lives. The values are DLPack's DLDeviceType, so conversion is a copy. */
typedef enum coil_device_type {
  COIL_DEVICE_CPU = 1,
  COIL_DEVICE_CUDA = 2,
  COIL_DEVICE_CUDA_HOST = 3, /* pinned host memory */
  COIL_DEVICE_ROCM = 10,
  COIL_DEVICE_EXT_DEV = 12,  /* 1.4: a vendor's own device (DLPack's kDLExtDev) */
} coil_device_type;

/* ---- devices and memory (ABI 1.4) ----
 *
 * A plugin that runs on its own device (an accelerator whose memory the host cannot touch)
 * lists its devices and gives the host their memory: the host then places a run's inputs and
 * outputs there (mem_alloc, a copy in, the run, a copy out) instead of handing over host
 * pointers. A plugin without these functions runs on host memory as before. Device pointers
 * are opaque to the host except for byte arithmetic: the host may pass ptr + k for a tensor
 * that starts k bytes into an allocation (an unaligned start, a guard area before it), and
 * never dereferences one unless the device is COIL_DEVICE_HOST_VISIBLE. */

#define COIL_DEVICE_HOST_VISIBLE (UINT32_C(1) << 0) /* the host may read and write the device's
                                                       memory through its pointers (unified or
                                                       host memory): no copies needed */

/* What one device is. The HOST sets struct_size to its sizeof and zeroes the rest; the plugin
 * fills the fields that lie within struct_size (COIL_STRUCT_HAS). */
typedef struct coil_device_info {
  size_t struct_size;
  const char *name;        /* "Acme NPU 2 (core 0)": static or owned by the instance */
  int32_t device_type;     /* the coil_device_type its tensors carry (COIL_DEVICE_EXT_DEV for
                              a vendor's device; CUDA, ROCm, ...) */
  int32_t device_index;    /* the device_index its tensors carry */
  uint64_t memory_bytes;   /* its memory, 0 when unknown */
  uint32_t alignment;      /* mem_alloc's results are aligned to this (a power of two >= 16) */
  uint32_t flags;          /* COIL_DEVICE_* bits */
} coil_device_info;

typedef enum coil_copy_kind {
  COIL_COPY_HOST_TO_DEVICE = 1,
  COIL_COPY_DEVICE_TO_HOST = 2,
  COIL_COPY_DEVICE_TO_DEVICE = 3, /* within one device */
} coil_copy_kind;

/* One copy of `bytes` bytes between host memory and a device's memory, or within a device. */
typedef struct coil_mem_copy_args {
  size_t struct_size;
  int32_t kind;          /* a coil_copy_kind */
  int32_t device;        /* the device (0 .. device_count-1) whose memory is involved */
  void *dst;             /* device pointer, or host memory for DEVICE_TO_HOST */
  const void *src;       /* device pointer, or host memory for HOST_TO_DEVICE */
  size_t bytes;          /* 0 is a no-op */
  coil_stream *stream;   /* NULL: synchronous, after everything queued on the device; the
                            copy is done when the call returns. Otherwise queued on that
                            stream (host memory must then stay valid and untouched until the
                            stream or a later event is synchronized) */
} coil_mem_copy_args;

/* ---- the statement query (ABI 1.4) ----
 * supports() sees an op name and a dtype; supports_stmt() sees a whole statement of a program,
 * for a plugin whose answer depends on shapes, layouts or attributes (a maximum tensor size, a
 * matmul it runs only with aligned strides, a reduction over at most 1024 elements). The host
 * asks it, beside supports(), when it decides which backend of a list runs a statement (partial
 * offload) and which conformance cases a plugin claims. */

/* A tensor a statement reads or writes: the buffer's dtype and layout. */
typedef struct coil_plugin_value {
  size_t struct_size;
  int32_t dtype;             /* a coil_dtype */
  int32_t rank;
  const int64_t *sizes;      /* rank entries; -1 where the size is symbolic (known at run time) */
  const int64_t *strides;    /* rank entries, in elements; -1 where symbolic */
} coil_plugin_value;

typedef enum coil_stmt_kind {
  COIL_STMT_KERNEL = 1,      /* a kernel_call: the kernel and the buffers it is called with */
  COIL_STMT_EXTERN = 2,      /* an extern_call: a library op */
} coil_stmt_kind;

/* One statement, everything borrowed for the call. */
typedef struct coil_plugin_stmt {
  size_t struct_size;
  int32_t kind;              /* a coil_stmt_kind */
  const char *op;            /* EXTERN: the ATen overload ("aten.mm.default"); KERNEL: the
                                kernel's name */
  const char *text;          /* the statement in Wrapper IR text: KERNEL: the kernel's
                                definition ("kernel NAME pointwise x[...] { ... }"), which
                                coil_wir_parse reads inside a program; EXTERN: its line */
  size_t ninputs;            /* what it reads: KERNEL: the buffers of its input params, in param
                                order; EXTERN: its arguments */
  const coil_plugin_value *const *inputs;
  size_t noutputs;           /* what it writes: KERNEL: its output params; EXTERN: its outs */
  const coil_plugin_value *const *outputs;
  size_t nattrs;             /* EXTERN: its scalar parameters, by name, with values as the text
                                writes them ("1", "0.5", "True", "[2, 3]"); KERNEL: none */
  const char *const *attr_names;
  const char *const *attr_values;
} coil_plugin_stmt;

/* ---- argument structs (filled by the host; struct_size = the host's sizeof) ---- */

/* Options for one plugin: the key/value pairs of its ini section [plugin.NAME] (keys bare, as in
 * the file: "arch" = "sm_90"), plus general options the host forwards, whose keys start with
 * "coil." ("coil.mode" = "max-autotune"). The host consumes "library" itself. A plugin accepts
 * (and may ignore) every "coil." key; any other key it does not know, or a value it cannot use,
 * makes it return COIL_ERR_INVALID_ARGUMENT with a message naming the key. */
typedef struct coil_plugin_options {
  size_t struct_size;
  size_t count;               /* number of pairs; 0 with NULL arrays when there are none */
  const char *const *keys;    /* count NUL-terminated keys: borrowed for the call */
  const char *const *values;  /* count NUL-terminated values: borrowed for the call */
} coil_plugin_options;

typedef struct coil_host_api coil_host_api;

typedef struct coil_plugin_create_args {
  size_t struct_size;
  const coil_plugin_options *options; /* borrowed for the call; NULL = none */
  const coil_host_api *host;          /* the host's table: owned by the host, valid until this
                                         instance is destroyed (the instance keeps it, e.g. to
                                         log; see coil_plugin_entry for why not a global) */
} coil_plugin_create_args;

typedef struct coil_plugin_compile_args {
  size_t struct_size;
  const coil_wir_program *program;    /* borrowed for the call, read-only; coil_wir_verify
                                         accepts it and its version is within the plugin's
                                         accepted range */
  const char *artifact_dir;           /* borrowed for the call: an existing, empty directory the
                                         host created for this compile alone. The plugin writes
                                         its generated sources, binaries and, last,
                                         COIL_ARTIFACT_MANIFEST there, and nothing elsewhere
                                         (temporary files aside). On error the host deletes it. */
  const coil_plugin_options *options; /* borrowed for the call; NULL = none. Same rules as at
                                         create; per-compile settings (coil.mode, ...) */
  /* ---- ABI 1.3 ---- */
  /* The program as Wrapper IR text (docs/wrapper-ir.md), the same program as `program`:
   * borrowed for the call, NUL-terminated, program_text_len bytes before the NUL. Its first
   * line names its version ("wir 1.4"). This is the stable handoff: it does not depend on the
   * layout of the host's structs, and what a plugin does with its own parse of it (set loop
   * ranges, simplify) never reaches the host. A plugin that sets COIL_FEATURE_PROGRAM_TEXT
   * reads only this (coil_sdk_compile_program in coil_sdk.h parses and verifies it with the
   * SDK's own Wrapper IR library) and gets program == NULL; one that does not gets both and
   * must treat program as read-only. A plugin that keeps the program in its artifact should
   * write this text verbatim (the host compares it with the artifact's coil.wir). */
  const char *program_text;
  size_t program_text_len;
} coil_plugin_compile_args;

typedef struct coil_plugin_load_args {
  size_t struct_size;
  const char *artifact_dir;           /* borrowed for the call: a directory this plugin's compile
                                         wrote, maybe in another process and with another
                                         version of the plugin (the plugin checks the manifest
                                         and returns COIL_ERR_VERSION if it cannot load it) */
  const coil_plugin_options *options; /* borrowed for the call; NULL = none */
} coil_plugin_load_args;

/* A tensor at run time: a small DLPack-like descriptor. Sizes and strides count elements;
 * element (i0, i1, ...) is at data + (i0*strides[0] + i1*strides[1] + ...) * dtype size. */
typedef struct coil_plugin_tensor {
  size_t struct_size;
  void *data;               /* the first element (view offsets already applied); owned by the
                               host; NULL only when the tensor has no elements */
  int32_t dtype;            /* a coil_dtype (base.h; values fixed by the order of dtypes.def) */
  int32_t rank;             /* 0..COIL_MAX_RANK */
  const int64_t *sizes;     /* rank entries; owned by the host, valid as long as data */
  const int64_t *strides;   /* rank entries, in elements, >= 0; owned by the host */
  int32_t device_type;      /* a coil_device_type */
  int32_t device_index;     /* 0 for COIL_DEVICE_CPU */
} coil_plugin_tensor;

/* One run. Inputs and outputs are in program order: inputs[i] is the program's input i
 * (arg0, arg1, ...), outputs[i] the i-th buffer of its `output` line.
 *
 * Outputs are preallocated by the host: outputs[i] has the dtype, sizes and strides of the
 * program's output buffer i, its size symbols bound from the inputs (the `symbol` lines), on the
 * device the plugin runs on; the plugin writes every element of every output and nothing else
 * of theirs. Outputs are dense, row-major (Wrapper IR 1.2). Outputs never alias inputs or each
 * other; when the program returns an input or a view of one, the plugin copies. The run is
 * synchronous: when it returns, the outputs hold the results (a device plugin has synchronized),
 * unless the caller gave a stream (1.2, below) or the user set a plugin option that says
 * otherwise (cuda: sync = false, for runs whose tensors all live on the device).
 *
 * A stream (1.2): has_stream nonzero means stream is the caller's (a CUstream for cuda, a
 * hipStream_t for hip; 0 is then the legacy default stream, not "none"). A device plugin queues
 * the run on it, ordered after what the caller queued there before, and returns without
 * synchronizing: the caller's later work on that stream sees the outputs. A plugin may use its
 * own streams inside the run as long as that order holds. A host-only plugin ignores both
 * fields (its runs are synchronous) and a 1.0/1.1 plugin never sees them (they lie past its
 * struct_size): it synchronizes, which is slower, never wrong. */
typedef struct coil_plugin_run_args {
  size_t struct_size;
  size_t ninputs;                           /* == program->ninputs */
  const coil_plugin_tensor *const *inputs;  /* descriptors and data borrowed for the call; the
                                               plugin reads them, and writes only the inputs the
                                               program names in copy_back lines */
  size_t noutputs;                          /* == buffers in the program's output line */
  const coil_plugin_tensor *const *outputs; /* descriptors borrowed for the call; data owned by
                                               the host, written by the plugin */
  /* ---- ABI 1.2 ---- */
  int32_t has_stream;                       /* nonzero: stream is the caller's (see above);
                                               for a plugin with stream_create (1.4), a
                                               coil_stream * it made */
  void *stream;                             /* the caller's stream when has_stream */
} coil_plugin_run_args;

/* ---- the host's table (filled by the host, read by the plugin) ---- */

struct coil_host_api {
  size_t struct_size;
  /* ---- ABI 1.0 ---- */
  uint32_t abi_major, abi_minor;  /* the host's COIL_PLUGIN_ABI_*, as passed to the entry */
  uint32_t wir_major, wir_minor;  /* the Wrapper IR version the host writes (its coil/wir.h) */
  const char *host_version;       /* coil's semver, e.g. "0.1.0"; static, for messages */
  /* [optional] Send one line to the host's log (the host adds the plugin's name). `host` is
   * this table. Callable from any thread while a call into the plugin is in progress, the entry
   * included. message: borrowed for the call, one line without a newline. */
  void (*log)(const coil_host_api *host, coil_log_level level, const char *message);
};

/* ---- the plugin's table (filled by the plugin, read by the host) ---- */

typedef struct coil_plugin_api coil_plugin_api;
struct coil_plugin_api {
  size_t struct_size;               /* sizeof(coil_plugin_api) as the plugin was built */
  /* ---- ABI 1.0: versions (the host reads these first) ---- */
  uint32_t abi_major;               /* COIL_PLUGIN_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;               /* COIL_PLUGIN_ABI_MINOR the plugin was built with */
  uint32_t min_host_minor;          /* oldest host minor (same major) it works with: the
                                       newest host feature it uses unguarded */

  /* ---- ABI 1.0: metadata [required]; strings static, owned by the plugin ---- */
  const char *name;                 /* [a-z0-9_-]{1,64}: the NAME of libcoil_NAME.so and of the
                                       ini section [plugin.NAME] */
  const char *vendor;               /* who makes it, e.g. "The coil authors"; non-empty */
  const char *version;              /* semver 2.0.0 of the plugin itself, e.g. "1.2.0-rc.1" */
  uint64_t features;                /* COIL_FEATURE_* bits */
  uint32_t wir_major;               /* the Wrapper IR it reads: this major ... */
  uint32_t wir_min_minor;           /* ... minors from this ... */
  uint32_t wir_max_minor;           /* ... to this (inclusive; COIL_WIR_ANY_MINOR: all) */

  /* ---- ABI 1.0: errors [required] ---- */
  /* err: an error this plugin returned and has not freed yet (never NULL). */
  coil_error_code (*error_code)(const coil_error *err);
  /* A one-line human message saying what failed and what was expected. Owned by err, valid
   * until error_free(err). */
  const char *(*error_message)(const coil_error *err);
  /* Releases err; the host calls it exactly once per returned error. */
  void (*error_free)(coil_error *err);

  /* ---- ABI 1.0: lifecycle ---- */
  /* [required] Makes an instance. args: borrowed for the call. *out: on success, an instance
   * owned by the host until destroy; untouched on error. Validates the options. */
  coil_error *(*create)(const coil_plugin_create_args *args, coil_plugin **out);
  /* [required] Releases an instance and everything it holds. Called after every artifact it
   * loaded has been freed; no other call on it runs at the same time. Never fails. */
  void (*destroy)(coil_plugin *self);
  /* [required] Whether the instance can compile (and, if it executes, run) an op on a dtype.
   * op: borrowed for the call; an ATen overload ("aten.add.Tensor", as extern_call lines name
   * library ops), a Wrapper IR kernel op ("add", the names of kops.def), or a reduction kind
   * as "reduce.KIND" ("reduce.welford_m2"), a combining store as "store.MODE" (Wrapper IR 1.3) or a scan
   * as "scan.KIND" (Wrapper IR 1.4). dtype: the instruction's result dtype (for an
   * extern call, its first output's). An op the plugin has never heard of is COIL_UNSUPPORTED.
   * Cheap and infallible; the conformance suite reports a test of an unsupported op as "not
   * supported", never as a failure. */
  coil_support (*supports)(const coil_plugin *self, const char *op, coil_dtype dtype);
  /* [required] Compiles one program into args->artifact_dir (see coil_plugin_compile_args).
   * May run on several threads at once on the same instance, each with its own program and
   * directory. An op it cannot do is COIL_ERR_UNSUPPORTED. */
  coil_error *(*compile)(coil_plugin *self, const coil_plugin_compile_args *args);

  /* ---- ABI 1.0: execution [optional]: all three present iff features has EXECUTES ---- */
  /* Loads an artifact for running. *out: on success, an artifact owned by the host until
   * artifact_free; it does not point into args. */
  coil_error *(*load)(coil_plugin *self, const coil_plugin_load_args *args,
                      coil_artifact **out);
  /* Runs a loaded artifact once (see coil_plugin_run_args). */
  coil_error *(*run)(coil_artifact *artifact, const coil_plugin_run_args *args);
  /* Releases a loaded artifact; called before destroy of the instance that loaded it. */
  void (*artifact_free)(coil_artifact *artifact);

  /* ---- ABI 1.1 [optional] ---- */
  /* What else, beyond the program and the options, decides what compile produces: for a
   * plugin that drives a compiler, that compiler's identity and version and its fixed flags.
   * The host puts it in the compile cache's key, so a changed toolchain misses the cache.
   * Returns a string owned by the instance, valid until destroy; NULL or absent: nothing. */
  const char *(*identity)(coil_plugin *self);

  /* ---- ABI 1.3 [optional] ---- */
  /* A vendor's extension, looked up by name ("VENDOR.NAME.vN", e.g. "acme.profiler.v1"): a
   * pointer to a static struct of the plugin's that starts with `size_t struct_size` (the rest
   * is the extension's own functions and data, as its vendor documents them), valid until the
   * library is closed; NULL for a name the plugin does not know. Lets a vendor give its own
   * tools more than this ABI without a new ABI minor (as ggml's get_proc_address and PJRT's
   * extension chain do). The host never needs one to compile or run. */
  const void *(*get_extension)(coil_plugin *self, const char *name);

  /* ---- ABI 1.4 [optional]: devices and memory ----
   * All five present or all absent. These, and the stream and event functions below, may be
   * called from several threads at once on one instance (as runs of different artifacts may
   * be, and they touch the same device): a plugin locks what they share. With them the host places a run's tensors on device 0
   * (or the device a user picks) through mem_alloc and mem_copy, unless that device is
   * COIL_DEVICE_HOST_VISIBLE. Without them, tensors are host memory (COIL_DEVICE_CPU), or what
   * the caller of the C API passes. */
  /* The number of devices this instance can run on (>= 1). Infallible. */
  int32_t (*device_count)(coil_plugin *self);
  /* Fills *out (struct_size set by the host) for device 0 .. device_count-1; another index is
   * COIL_ERR_INVALID_ARGUMENT. */
  coil_error *(*device_info)(coil_plugin *self, int32_t device, coil_device_info *out);
  /* Allocates bytes (0 allowed: a unique pointer that may not be dereferenced, or NULL) on
   * device, aligned to its coil_device_info.alignment. *out: owned by the host until mem_free;
   * untouched on error. Too much: COIL_ERR_OUT_OF_MEMORY, naming the size. */
  coil_error *(*mem_alloc)(coil_plugin *self, int32_t device, size_t bytes, void **out);
  /* Releases what mem_alloc returned (NULL: nothing), after the work queued on it finished or
   * was synchronized. Never fails. */
  void (*mem_free)(coil_plugin *self, int32_t device, void *ptr);
  /* See coil_mem_copy_args. A pointer that is not in (or runs past) one of this instance's
   * allocations is COIL_ERR_INVALID_ARGUMENT where the plugin can tell. */
  coil_error *(*mem_copy)(coil_plugin *self, const coil_mem_copy_args *args);

  /* ---- ABI 1.4 [optional]: streams (all three or none; they need the devices above) ----
   * A stream runs what is queued on it in order, asynchronously to the host. A run whose
   * run_args has has_stream = 1 and stream = one of these is queued there and returns at once;
   * an error of queued work (a kernel that faulted, a bad index) is returned by the next
   * stream_sync of that stream (or event_sync past it) and names the failing kernel. Work after
   * a failed item is skipped until that sync; the stream is usable again afterwards. */
  coil_error *(*stream_create)(coil_plugin *self, int32_t device, coil_stream **out);
  /* Waits for everything queued on stream; returns the first error among it (see above). */
  coil_error *(*stream_sync)(coil_plugin *self, coil_stream *stream);
  /* Synchronizes (dropping any error) and releases. NULL: nothing. */
  void (*stream_destroy)(coil_plugin *self, coil_stream *stream);

  /* ---- ABI 1.4 [optional]: events (all four or none; they need streams) ---- */
  /* A new event at the current end of stream. *out: owned by the host until event_destroy. */
  coil_error *(*event_record)(coil_plugin *self, coil_stream *stream, coil_event **out);
  /* Later work queued on stream waits for the work before event (maybe on another stream). */
  coil_error *(*event_wait)(coil_plugin *self, coil_stream *stream, coil_event *event);
  /* Waits for the work before event; returns its first error, as stream_sync does. */
  coil_error *(*event_sync)(coil_plugin *self, coil_event *event);
  void (*event_destroy)(coil_plugin *self, coil_event *event);

  /* ---- ABI 1.4 [optional]: the statement query ---- */
  /* Whether the instance can compile (and run) this statement as the program holds it (see
   * coil_plugin_stmt). Asked in addition to supports() for every op and dtype of the statement:
   * both must say yes. Cheap and infallible; NULL: supports() alone decides. */
  coil_support (*supports_stmt)(const coil_plugin *self, const coil_plugin_stmt *stmt);

  /* ---- ABI 1.5 and later append here ---- */
};

/* The size of the 1.0 plugin table: the least struct_size a host accepts. */
#define COIL_PLUGIN_API_SIZE_1_0 COIL_STRUCT_SIZE_TO(coil_plugin_api, artifact_free)
/* The size of the 1.1 and 1.2 plugin tables (1.2 added no function). */
#define COIL_PLUGIN_API_SIZE_1_2 COIL_STRUCT_SIZE_TO(coil_plugin_api, identity)
/* The size of the 1.3 plugin table. */
#define COIL_PLUGIN_API_SIZE_1_3 COIL_STRUCT_SIZE_TO(coil_plugin_api, get_extension)
/* The size of the 1.0 host table: the least struct_size a plugin may expect. */
#define COIL_HOST_API_SIZE_1_0 COIL_STRUCT_SIZE_TO(coil_host_api, log)

/* The entry point, exported by every plugin and called by the host once per dlopen, before
 * anything else. It may be called again after a dlclose and dlopen, or while the library is
 * already open (a second dlopen of the same file), so it keeps no state: it checks the host's
 * version, maybe probes the machine, and returns a static table.
 *
 *   host_abi_major, host_abi_minor: the host's COIL_PLUGIN_ABI_MAJOR/MINOR.
 *   host:    the host's table, valid during this call (e.g. to log why it declines). The
 *            plugin reads only fields within host->struct_size. It does not keep the pointer
 *            in a global: a host may dlopen the same library twice (one mapping, two entry
 *            calls, two tables) and close one; each instance gets its table at create.
 *   why_not: where to write the reason when returning NULL: a static NUL-terminated string
 *            owned by the plugin, e.g. "needs plugin ABI 2.x". Never NULL.
 *
 * Returns the plugin's table, static and owned by the plugin, valid until dlclose; or NULL when
 * the plugin cannot serve this host (major mismatch, missing device library, ...), with
 * *why_not set. Must not fail in any other way: no abort, no exit. */
typedef const coil_plugin_api *coil_plugin_entry_fn(uint32_t host_abi_major,
                                                    uint32_t host_abi_minor,
                                                    const coil_host_api *host,
                                                    const char **why_not);

COIL_PLUGIN_EXPORT const coil_plugin_api *coil_plugin_entry(uint32_t host_abi_major,
                                                            uint32_t host_abi_minor,
                                                            const coil_host_api *host,
                                                            const char **why_not);

#ifdef __cplusplus
}
#endif

#endif
