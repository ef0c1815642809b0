/* runtime.c — the plugin loader: search path, dlopen, the checks on what a plugin's entry hands
 * back, and the calls into a plugin with its error objects turned into coil_diag messages.
 *
 * Nothing a plugin returns is trusted before it is checked: the table's struct_size and versions
 * are read before anything else, then it is copied into a zeroed coil_plugin_api up to its
 * struct_size (so fields a plugin does not know read as NULL, as the ABI promises), and its
 * strings are measured with a bound before they are read or printed. */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coil/strbuf.h"
#include "runtime.h"

#define NAME_MAX_LEN 64     /* a plugin name: [a-z0-9_-]{1,64} */
#define TEXT_MAX_LEN 256    /* vendor and version strings */
#define MESSAGE_MAX_LEN 1024 /* a plugin's error message as copied into a diag */

/* ---- small checks ---- */

static bool
valid_name(const char *s)
{
  size_t n = strnlen(s, NAME_MAX_LEN + 1);
  if (n == 0 || n > NAME_MAX_LEN)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
          s[i] == '-'))
      return false;
  return true;
}

/* Copies plugin-supplied text for a message: at most cap-1 bytes, control characters as spaces
 * (a message stays on one line and cannot move the terminal's cursor). */
static void
clean_copy(char *dst, size_t cap, const char *src)
{
  size_t i = 0;
  for (; src[i] && i + 1 < cap; i++) {
    unsigned char c = (unsigned char)src[i];
    dst[i] = (char)(c < 0x20 || c == 0x7f ? ' ' : c);
  }
  dst[i] = 0;
}

/* num = "0" | [1-9][0-9]* */
static const char *
semver_num(const char *s)
{
  if (*s == '0')
    return s + 1;
  if (*s < '1' || *s > '9')
    return NULL;
  while (*s >= '0' && *s <= '9')
    s++;
  return s;
}

/* idents = ident ("." ident)*; ident = [0-9A-Za-z-]+, and in a pre-release a numeric ident has
 * no leading zero. */
static const char *
semver_idents(const char *s, bool pre)
{
  for (;;) {
    const char *b = s;
    bool digits = true;
    while (isalnum((unsigned char)*s) || *s == '-') {
      digits = digits && isdigit((unsigned char)*s);
      s++;
    }
    if (s == b || (pre && digits && s - b > 1 && *b == '0'))
      return NULL;
    if (*s != '.')
      return s;
    s++;
  }
}

/* semver = num "." num "." num ["-" idents] ["+" idents]  (semver.org 2.0.0) */
static bool
valid_semver(const char *v)
{
  if (strnlen(v, TEXT_MAX_LEN + 1) > TEXT_MAX_LEN)
    return false;
  const char *s = v;
  for (int i = 0; i < 3; i++) {
    if (!(s = semver_num(s)))
      return false;
    if (i < 2 && *s++ != '.')
      return false;
  }
  if (*s == '-' && !(s = semver_idents(s + 1, true)))
    return false;
  if (*s == '+' && !(s = semver_idents(s + 1, false)))
    return false;
  return *s == 0;
}

static bool
valid_text(const char *s)
{
  size_t n = strnlen(s, TEXT_MAX_LEN + 1);
  if (n == 0 || n > TEXT_MAX_LEN)
    return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return false;
  return true;
}

static bool
is_path(const char *s)
{
  size_t n = strlen(s);
  return strchr(s, '/') || (n >= 3 && strcmp(s + n - 3, ".so") == 0);
}

static char *
path_join(const char *dir, const char *file)
{
  size_t n = strlen(dir);
  const char *sep = n && dir[n - 1] == '/' ? "" : "/";
  size_t len = n + strlen(sep) + strlen(file) + 1;
  char *p = malloc(len);
  if (!p)
    abort(); /* out of memory: the one exit coil.h allows */
  snprintf(p, len, "%s%s%s", dir, sep, file);
  return p;
}

static char *
xstrdup(const char *s)
{
  char *p = strdup(s);
  if (!p)
    abort();
  return p;
}

const char *
coil_plugin_error_name(int code)
{
  switch (code) {
  case COIL_ERR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
  case COIL_ERR_UNSUPPORTED: return "UNSUPPORTED";
  case COIL_ERR_COMPILE_FAILED: return "COMPILE_FAILED";
  case COIL_ERR_RUNTIME: return "RUNTIME";
  case COIL_ERR_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
  case COIL_ERR_VERSION: return "VERSION";
  case COIL_ERR_IO: return "IO";
  default: return "INTERNAL";
  }
}

/* ---- the search path ---- */

/* Adds dir[0..n) unless it is there already: the config layer may have taken plugin_path from
 * COIL_PLUGIN_PATH too. */
static void
dirs_push(coil_plugin_dirs *dirs, const char *dir, size_t n)
{
  for (int i = 0; i < dirs->n; i++)
    if (strlen(dirs->dirs[i]) == n && strncmp(dirs->dirs[i], dir, n) == 0)
      return;
  char **grown = realloc(dirs->dirs, (size_t)(dirs->n + 1) * sizeof *grown);
  char *copy = strndup(dir, n);
  if (!grown || !copy)
    abort();
  dirs->dirs = grown;
  dirs->dirs[dirs->n++] = copy;
}

/* list = entry (":" entry)*; empty entries are skipped */
static void
dirs_push_list(coil_plugin_dirs *dirs, const char *list)
{
  if (!list)
    return;
  for (const char *s = list; *s;) {
    const char *e = strchr(s, ':');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n)
      dirs_push(dirs, s, n);
    s += n + (e != NULL);
  }
}

void
coil_plugin_dirs_init(coil_plugin_dirs *dirs, const char *config_plugin_path,
                      const char *builtin_dir)
{
  dirs->n = 0;
  dirs->dirs = NULL;
  dirs_push_list(dirs, config_plugin_path);
  dirs_push_list(dirs, getenv("COIL_PLUGIN_PATH"));
  if (builtin_dir && *builtin_dir) /* one directory: a ':' in it is part of its name */
    dirs_push(dirs, builtin_dir, strlen(builtin_dir));
}

void
coil_plugin_dirs_free(coil_plugin_dirs *dirs)
{
  for (int i = 0; i < dirs->n; i++)
    free(dirs->dirs[i]);
  free(dirs->dirs);
  dirs->n = 0;
  dirs->dirs = NULL;
}

/* ---- the host table ---- */

static void
host_log(const coil_host_api *host, coil_log_level level, const char *message)
{
  /* host is the first member of the coil_loaded_plugin that gave it out. */
  const coil_loaded_plugin *lp = (const coil_loaded_plugin *)host;
  if (!lp || !lp->log || !message)
    return;
  char text[MESSAGE_MAX_LEN];
  clean_copy(text, sizeof text, message);
  if ((unsigned)level > COIL_LOG_ERROR) /* garbage from the plugin */
    level = COIL_LOG_ERROR;
  lp->log(lp->log_user, lp->label, level, text);
}

/* ---- checking a plugin's table ---- */

/* Checks what the entry returned; on success lp->api holds the copy. */
static int
check_table(coil_loaded_plugin *lp, const coil_plugin_api *t, const char *want_name,
            coil_diag *d)
{
  const char *path = lp->path;
  size_t size = t->struct_size;
  size_t least = COIL_PLUGIN_API_SIZE_1_0;
  if (size < COIL_STRUCT_SIZE_TO(coil_plugin_api, min_host_minor))
    return coil_diag_at(d, path, 0, 0,
                        "the plugin table's struct_size is %zu; expected at least %zu (the size "
                        "of the plugin ABI %d.0 table, sizeof(coil_plugin_api))",
                        size, least, COIL_PLUGIN_ABI_MAJOR);
  if (t->abi_major != COIL_PLUGIN_ABI_MAJOR)
    return coil_diag_at(d, path, 0, 0,
                        "the plugin was built for plugin ABI %u.%u, but this coil speaks %d.%d: "
                        "the major versions must be equal (rebuild the plugin against this "
                        "coil's coil_plugin.h)",
                        t->abi_major, t->abi_minor, COIL_PLUGIN_ABI_MAJOR, COIL_PLUGIN_ABI_MINOR);
  if (size < least)
    return coil_diag_at(d, path, 0, 0,
                        "the plugin table's struct_size is %zu; expected at least %zu (the size "
                        "of the plugin ABI %d.0 table, sizeof(coil_plugin_api))",
                        size, least, COIL_PLUGIN_ABI_MAJOR);
  if (t->min_host_minor > COIL_PLUGIN_ABI_MINOR)
    return coil_diag_at(d, path, 0, 0,
                        "the plugin needs a host with plugin ABI %d.%u or newer, but this coil "
                        "speaks %d.%d (update coil, or build the plugin with a lower "
                        "min_host_minor)",
                        COIL_PLUGIN_ABI_MAJOR, t->min_host_minor, COIL_PLUGIN_ABI_MAJOR,
                        COIL_PLUGIN_ABI_MINOR);

  /* From here on only the copy is read: past the plugin's struct_size it is zero. */
  memset(&lp->api, 0, sizeof lp->api);
  memcpy(&lp->api, t, size < sizeof lp->api ? size : sizeof lp->api);
  lp->api_struct_size = size;
  if (lp->api.abi_minor < 3) /* bits a plugin built before 1.3 set meant nothing then */
    lp->api.features &= ~COIL_FEATURE_PROGRAM_TEXT;
  const coil_plugin_api *a = &lp->api;

  coil_strbuf why = {0};
  const char *sep = "";
#define PROBLEM(...) \
  (coil_strbuf_puts(&why, sep), coil_strbuf_printf(&why, __VA_ARGS__), sep = "; ")
  struct { const char *name; bool present; } required[] = {
    {"error_code", a->error_code}, {"error_message", a->error_message},
    {"error_free", a->error_free}, {"create", a->create}, {"destroy", a->destroy},
    {"supports", a->supports}, {"compile", a->compile},
  };
  int missing = 0;
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
    if (!required[i].present) {
      if (!missing++)
        PROBLEM("required function(s) missing: %s", required[i].name);
      else
        coil_strbuf_printf(&why, ", %s", required[i].name);
    }

  char shown[TEXT_MAX_LEN + 1];
  if (!a->name)
    PROBLEM("metadata: name is NULL; expected 1-%d characters of [a-z0-9_-]", NAME_MAX_LEN);
  else if (!valid_name(a->name)) {
    clean_copy(shown, sizeof shown, a->name);
    PROBLEM("metadata: name '%s' is not valid; expected 1-%d characters of [a-z0-9_-]", shown,
            NAME_MAX_LEN);
  }
  if (!a->vendor)
    PROBLEM("metadata: vendor is NULL; expected a non-empty string");
  else if (!valid_text(a->vendor))
    PROBLEM("metadata: vendor is not valid; expected 1-%d printable characters", TEXT_MAX_LEN);
  if (!a->version)
    PROBLEM("metadata: version is NULL; expected a semver such as 1.0.0");
  else if (!valid_semver(a->version)) {
    clean_copy(shown, sizeof shown, a->version);
    PROBLEM("metadata: version '%s' is not a semver; expected MAJOR.MINOR.PATCH[-PRE][+BUILD]",
            shown);
  }
  uint32_t wir_minor = COIL_WIR_VERSION_MINOR; /* a variable: "< 0" is no typo while it is 0 */
  bool executes = a->features & COIL_FEATURE_EXECUTES;
  bool emits = a->features & COIL_FEATURE_EMITS_ONLY;
  if (executes == emits)
    PROBLEM("metadata: features has %s of COIL_FEATURE_EXECUTES and COIL_FEATURE_EMITS_ONLY; "
            "expected exactly one", executes ? "both" : "neither");
  else if (executes && (!a->load || !a->run || !a->artifact_free))
    PROBLEM("features has COIL_FEATURE_EXECUTES, so load, run and artifact_free are required; "
            "missing:%s%s%s", a->load ? "" : " load", a->run ? "" : " run",
            a->artifact_free ? "" : " artifact_free");
  /* The 1.4 groups: each all or none, streams need devices and events need streams. */
  struct { const char *name; bool present; } groups[3][5] = {
    {{"device_count", a->device_count}, {"device_info", a->device_info},
     {"mem_alloc", a->mem_alloc}, {"mem_free", a->mem_free}, {"mem_copy", a->mem_copy}},
    {{"stream_create", a->stream_create}, {"stream_sync", a->stream_sync},
     {"stream_destroy", a->stream_destroy}},
    {{"event_record", a->event_record}, {"event_wait", a->event_wait},
     {"event_sync", a->event_sync}, {"event_destroy", a->event_destroy}},
  };
  static const char *const group_names[3] = {"devices", "streams", "events"};
  bool group_on[3];
  for (int g = 0; g < 3; g++) {
    int n = 0, have = 0;
    for (; n < 5 && groups[g][n].name; n++)
      have += groups[g][n].present;
    group_on[g] = have == n;
    if (have && have != n) {
      coil_strbuf list = {0};
      for (int k = 0; k < n; k++)
        if (!groups[g][k].present)
          coil_strbuf_printf(&list, " %s", groups[g][k].name);
      PROBLEM("the %s functions (ABI 1.4) are all present or all NULL; missing:%s",
              group_names[g], list.s);
      coil_strbuf_free(&list);
    } else if (have && g > 0 && !group_on[g - 1])
      PROBLEM("the %s functions (ABI 1.4) need the %s functions, which are NULL",
              group_names[g], group_names[g - 1]);
  }
  if (a->wir_min_minor > a->wir_max_minor)
    PROBLEM("metadata: Wrapper IR range %u.%u-%u.%u is empty", a->wir_major, a->wir_min_minor,
            a->wir_major, a->wir_max_minor);
  else if (a->wir_major != COIL_WIR_VERSION_MAJOR || a->wir_min_minor > wir_minor ||
           a->wir_max_minor < wir_minor)
    PROBLEM("the plugin reads Wrapper IR %u.%u to %u.%u, but this coil writes %d.%d", a->wir_major,
            a->wir_min_minor, a->wir_major, a->wir_max_minor, COIL_WIR_VERSION_MAJOR,
            COIL_WIR_VERSION_MINOR);
  if (!why.len && want_name && strcmp(a->name, want_name) != 0)
    PROBLEM("the plugin calls itself '%s', but was looked up as '%s' (expected the NAME of "
            "libcoil_NAME.so)", a->name, want_name);
#undef PROBLEM

  if (why.len) {
    coil_diag_at(d, path, 0, 0, "not a valid coil plugin: %s", why.s);
    coil_strbuf_free(&why);
    return -1;
  }
  free(lp->label);
  lp->label = xstrdup(a->name);
  return 0;
}

/* Opens the file at path (owned by lp from here) and checks it. want_name: the name it must
 * declare, or NULL. */
static int
open_file(coil_loaded_plugin *lp, const char *want_name, coil_diag *d)
{
  const char *path = lp->path;
  char *local = NULL; /* dlopen("x.so") would search the system's paths, not "./x.so" */
  if (!strchr(path, '/'))
    local = path_join(".", path);
  dlerror();
  lp->handle = dlopen(local ? local : path, RTLD_NOW | RTLD_LOCAL);
  free(local);
  if (!lp->handle) {
    const char *e = dlerror();
    return coil_diag_at(d, path, 0, 0, "cannot load the plugin library: %s",
                        e ? e : "dlopen failed without a reason");
  }
  dlerror();
  void *sym = dlsym(lp->handle, COIL_PLUGIN_ENTRY_SYMBOL);
  if (!sym)
    return coil_diag_at(d, path, 0, 0,
                        "not a coil plugin: it exports no symbol `%s` (expected the entry point "
                        "of coil/coil_plugin.h, defined with COIL_PLUGIN_EXPORT)",
                        COIL_PLUGIN_ENTRY_SYMBOL);
  coil_plugin_entry_fn *entry;
  memcpy(&entry, &sym, sizeof entry); /* POSIX: dlsym's object pointer holds a function */

  lp->host = (coil_host_api){
    .struct_size = sizeof(coil_host_api),
    .abi_major = COIL_PLUGIN_ABI_MAJOR,
    .abi_minor = COIL_PLUGIN_ABI_MINOR,
    .wir_major = COIL_WIR_VERSION_MAJOR,
    .wir_minor = COIL_WIR_VERSION_MINOR,
    .host_version = COIL_VERSION_STRING,
    .log = host_log,
  };
  const char *why_not = NULL;
  const coil_plugin_api *t =
      entry(COIL_PLUGIN_ABI_MAJOR, COIL_PLUGIN_ABI_MINOR, &lp->host, &why_not);
  if (!t) {
    char reason[MESSAGE_MAX_LEN];
    clean_copy(reason, sizeof reason, why_not && *why_not ? why_not : "no reason given");
    return coil_diag_at(d, path, 0, 0,
                        "the plugin declined to serve this host (coil %s, plugin ABI %d.%d): %s",
                        COIL_VERSION_STRING, COIL_PLUGIN_ABI_MAJOR, COIL_PLUGIN_ABI_MINOR,
                        reason);
  }
  return check_table(lp, t, want_name, d);
}

static coil_loaded_plugin *
loaded_new(char *path, const char *label)
{
  coil_loaded_plugin *lp = calloc(1, sizeof *lp);
  if (!lp)
    abort();
  lp->path = path;
  lp->label = xstrdup(label);
  return lp;
}

/* Looks for libcoil_NAME.so in dirs: a malloc'd path, or NULL with the message written. */
static char *
find_plugin(const char *name, const char *const *dirs, int ndirs, coil_diag *d)
{
  char file[NAME_MAX_LEN + 16];
  snprintf(file, sizeof file, "libcoil_%s.so", name);
  for (int i = 0; i < ndirs; i++) {
    if (!dirs[i] || !*dirs[i])
      continue;
    char *p = path_join(dirs[i], file);
    if (access(p, F_OK) == 0)
      return p;
    free(p);
  }
  coil_strbuf where = {0};
  for (int i = 0; i < ndirs; i++)
    if (dirs[i] && *dirs[i])
      coil_strbuf_printf(&where, "%s%s", where.len ? ", " : "", dirs[i]);
  coil_diag_set(d,
                "plugin '%s' not found: no %s in %s (the search path is [coil] plugin_path, then "
                "COIL_PLUGIN_PATH, then the built-in plugin directory; or name the file by "
                "its path)",
                name, file, where.len ? where.s : "an empty search path");
  coil_strbuf_free(&where);
  return NULL;
}

int
coil_plugin_open(const char *name_or_path, const char *const *search_dirs, int ndirs,
                 coil_loaded_plugin **out, coil_diag *d)
{
  *out = NULL;
  if (!name_or_path || !*name_or_path)
    return coil_diag_set(d, "no plugin named: expected a name ([a-z0-9_-]+) or the path of a "
                            "plugin library");
  char *path;
  const char *want_name = NULL;
  if (is_path(name_or_path)) {
    if (access(name_or_path, F_OK) != 0)
      return coil_diag_at(d, name_or_path, 0, 0, "cannot open the plugin library: %s",
                          strerror(errno));
    path = xstrdup(name_or_path);
  } else {
    if (!valid_name(name_or_path))
      return coil_diag_set(d,
                           "plugin name '%s' is not valid: expected a name of 1-%d characters "
                           "of [a-z0-9_-] (found as libcoil_NAME.so), or a path (containing "
                           "'/' or ending in .so)",
                           name_or_path, NAME_MAX_LEN);
    if (!(path = find_plugin(name_or_path, search_dirs, ndirs, d)))
      return -1;
    want_name = name_or_path;
  }
  coil_loaded_plugin *lp = loaded_new(path, want_name ? want_name : path);
  if (open_file(lp, want_name, d) < 0) {
    coil_plugin_close(lp);
    return -1;
  }
  *out = lp;
  return 0;
}

void
coil_plugin_close(coil_loaded_plugin *lp)
{
  if (!lp)
    return;
  if (lp->handle)
    dlclose(lp->handle);
  free(lp->path);
  free(lp->label);
  free(lp);
}

void
coil_plugin_set_log(coil_loaded_plugin *lp, coil_plugin_log_fn fn, void *user)
{
  lp->log = fn;
  lp->log_user = user;
}

/* ---- listing ---- */

static int
plugin_file(const struct dirent *e)
{
  size_t n = strlen(e->d_name);
  return n > strlen("libcoil_") + strlen(".so") && strncmp(e->d_name, "libcoil_", 8) == 0 &&
         strcmp(e->d_name + n - 3, ".so") == 0;
}

int
coil_plugin_list(const char *const *dirs, int ndirs,
                 void (*fn)(void *user, const coil_plugin_listing *entry), void *user)
{
  int count = 0, nseen = 0;
  char **seen = NULL; /* names found in earlier directories */
  for (int i = 0; i < ndirs; i++) {
    if (!dirs[i] || !*dirs[i])
      continue;
    struct dirent **ents = NULL;
    int n = scandir(dirs[i], &ents, plugin_file, alphasort);
    int first_of_dir = nseen;
    for (int j = 0; j < n; j++) {
      const char *file = ents[j]->d_name;
      char *name = strndup(file + 8, strlen(file) - 8 - 3);
      if (!name)
        abort();
      bool shadowed = false;
      for (int k = 0; k < first_of_dir; k++)
        shadowed = shadowed || strcmp(seen[k], name) == 0;
      coil_diag d = {{0}};
      coil_loaded_plugin *lp = loaded_new(path_join(dirs[i], file), name);
      int rc = open_file(lp, valid_name(name) ? name : NULL, &d);
      coil_plugin_listing entry = {
        .path = lp->path, .name = name, .plugin = rc == 0 ? lp : NULL,
        .error = rc == 0 ? NULL : d.msg, .shadowed = shadowed,
      };
      fn(user, &entry);
      coil_plugin_close(lp);
      char **grown = realloc(seen, (size_t)(nseen + 1) * sizeof *seen);
      if (!grown)
        abort();
      seen = grown;
      seen[nseen++] = name;
      free(ents[j]);
      count++;
    }
    free(ents);
  }
  for (int k = 0; k < nseen; k++)
    free(seen[k]);
  free(seen);
  return count;
}

/* ---- calling into a plugin ---- */

/* Turns a plugin's error into a message, frees it through the plugin, and returns -code. */
static int
take_error(const coil_loaded_plugin *lp, coil_error *e, const char *call, coil_diag *d)
{
  int code = (int)lp->api.error_code(e);
  if (code < COIL_ERR_INVALID_ARGUMENT || code > COIL_ERR_IO)
    code = COIL_ERR_INTERNAL;
  const char *m = lp->api.error_message(e);
  char msg[MESSAGE_MAX_LEN];
  clean_copy(msg, sizeof msg, m && *m ? m : "plugin returned an error without a message");
  coil_diag_at(d, lp->path, 0, 0, "plugin '%s': %s failed [%s]: %s", lp->label, call,
               coil_plugin_error_name(code), msg);
  lp->api.error_free(e);
  return -code;
}

static int
fail(coil_diag *d, int code, const char *fmt, const char *a, const char *b)
{
  coil_diag_set(d, fmt, a, b);
  return -code;
}

int
coil_plugin_create(const coil_loaded_plugin *lp, const coil_plugin_options *opts,
                   coil_plugin **out, coil_diag *d)
{
  *out = NULL;
  coil_plugin_create_args args = {.struct_size = sizeof args, .options = opts, .host = &lp->host};
  coil_plugin *inst = NULL;
  coil_error *e = lp->api.create(&args, &inst);
  if (e)
    return take_error(lp, e, "create", d);
  if (!inst)
    return fail(d, COIL_ERR_INTERNAL, "%s: plugin '%s': create returned neither an error nor "
                "an instance", lp->path, lp->label);
  *out = inst;
  return 0;
}

void
coil_plugin_destroy(const coil_loaded_plugin *lp, coil_plugin *inst)
{
  if (inst)
    lp->api.destroy(inst);
}

coil_support
coil_plugin_supports(const coil_loaded_plugin *lp, const coil_plugin *inst, const char *op,
                     coil_dtype dtype)
{
  if (!op)
    return COIL_UNSUPPORTED;
  /* Anything but a clear yes is a no. */
  return lp->api.supports(inst, op, dtype) == COIL_SUPPORTED ? COIL_SUPPORTED : COIL_UNSUPPORTED;
}

int
coil_plugin_compile(const coil_loaded_plugin *lp, coil_plugin *inst,
                    const coil_wir_program *program, const char *dir,
                    const coil_plugin_options *opts, coil_diag *d)
{
  const coil_plugin_api *a = &lp->api;
  if (!program || !dir || !*dir)
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "%s: plugin '%s': compile needs a program and an "
                "artifact directory", lp->path, lp->label);
  if (program->version_major < 0 || program->version_minor < 0 ||
      (uint32_t)program->version_major != a->wir_major ||
      (uint32_t)program->version_minor < a->wir_min_minor ||
      (uint32_t)program->version_minor > a->wir_max_minor) {
    coil_diag_at(d, lp->path, 0, 0,
                 "plugin '%s' reads Wrapper IR %u.%u to %u.%u; the program is Wrapper IR %d.%d",
                 lp->label, a->wir_major, a->wir_min_minor, a->wir_major, a->wir_max_minor,
                 program->version_major, program->version_minor);
    return -COIL_ERR_VERSION;
  }
  coil_diag why = {{0}};
  if (coil_wir_verify(program, &why) < 0) {
    coil_diag_set(d, "program '%s' does not verify, so it is not handed to plugin '%s': %s",
                  program->name ? program->name : "?", lp->label, why.msg);
    return -COIL_ERR_INVALID_ARGUMENT;
  }
  char *text = coil_wir_print(program); /* the handoff that does not depend on our structs */
  bool text_only = a->features & COIL_FEATURE_PROGRAM_TEXT;
  coil_plugin_compile_args args = {
    .struct_size = sizeof args,
    .program = text_only ? NULL : program,
    .artifact_dir = dir, .options = opts, .program_text = text, .program_text_len = strlen(text),
  };
  coil_error *e = a->compile(inst, &args);
  free(text);
  if (e)
    return take_error(lp, e, "compile", d);
  char *manifest = path_join(dir, COIL_ARTIFACT_MANIFEST);
  int ok = access(manifest, F_OK) == 0;
  free(manifest);
  if (!ok) {
    coil_diag_at(d, lp->path, 0, 0,
                 "plugin '%s': compile succeeded but wrote no %s into %s (expected the "
                 "artifact's manifest, written last)",
                 lp->label, COIL_ARTIFACT_MANIFEST, dir);
    return -COIL_ERR_INTERNAL;
  }
  return 0;
}

int
coil_plugin_load(const coil_loaded_plugin *lp, coil_plugin *inst, const char *dir,
                 const coil_plugin_options *opts, coil_artifact **out, coil_diag *d)
{
  *out = NULL;
  if (!lp->api.load) {
    coil_diag_at(d, lp->path, 0, 0,
                 "plugin '%s' only emits code: it cannot load or run an artifact (its output is "
                 "the files in %s)",
                 lp->label, dir ? dir : "the artifact directory");
    return -COIL_ERR_UNSUPPORTED;
  }
  coil_plugin_load_args args = {.struct_size = sizeof args, .artifact_dir = dir, .options = opts};
  coil_artifact *art = NULL;
  coil_error *e = lp->api.load(inst, &args, &art);
  if (e)
    return take_error(lp, e, "load", d);
  if (!art)
    return fail(d, COIL_ERR_INTERNAL, "%s: plugin '%s': load returned neither an error nor an "
                "artifact", lp->path, lp->label);
  *out = art;
  return 0;
}

int
coil_plugin_run(const coil_loaded_plugin *lp, coil_artifact *art, int ninputs,
                const coil_plugin_tensor *const *inputs, int noutputs,
                const coil_plugin_tensor *const *outputs, coil_diag *d)
{
  return coil_plugin_run_stream(lp, art, ninputs, inputs, noutputs, outputs, false, NULL, d);
}

int
coil_plugin_run_stream(const coil_loaded_plugin *lp, coil_artifact *art, int ninputs,
                       const coil_plugin_tensor *const *inputs, int noutputs,
                       const coil_plugin_tensor *const *outputs, bool has_stream, void *stream,
                       coil_diag *d)
{
  if (!lp->api.run || !art)
    return fail(d, COIL_ERR_UNSUPPORTED, "%s: plugin '%s' cannot run artifacts", lp->path,
                lp->label);
  if (ninputs < 0 || noutputs < 0)
    return fail(d, COIL_ERR_INVALID_ARGUMENT, "%s: plugin '%s': run with a negative count",
                lp->path, lp->label);
  coil_plugin_run_args args = {
    .struct_size = sizeof args,
    .ninputs = (size_t)ninputs, .inputs = inputs,
    .noutputs = (size_t)noutputs, .outputs = outputs,
    .has_stream = has_stream, .stream = stream,
  };
  coil_error *e = lp->api.run(art, &args);
  return e ? take_error(lp, e, "run", d) : 0;
}

void
coil_plugin_artifact_free(const coil_loaded_plugin *lp, coil_artifact *art)
{
  if (art && lp->api.artifact_free)
    lp->api.artifact_free(art);
}

/* ---- devices, memory, streams, events (ABI 1.4) ---- */

bool
coil_plugin_has_devices(const coil_loaded_plugin *lp)
{
  return lp->api.device_count != NULL; /* check_table: the group is whole or absent */
}

bool
coil_plugin_has_streams(const coil_loaded_plugin *lp)
{
  return lp->api.stream_create != NULL;
}

bool
coil_plugin_has_events(const coil_loaded_plugin *lp)
{
  return lp->api.event_record != NULL;
}

int
coil_plugin_device_count(const coil_loaded_plugin *lp, coil_plugin *inst)
{
  if (!lp->api.device_count)
    return 0;
  int32_t n = lp->api.device_count(inst);
  return n > 0 ? (int)n : 0;
}

int
coil_plugin_device_info(const coil_loaded_plugin *lp, coil_plugin *inst, int device,
                        coil_device_info *out, coil_diag *d)
{
  *out = (coil_device_info){.struct_size = sizeof *out};
  if (!lp->api.device_info)
    return fail(d, COIL_ERR_UNSUPPORTED, "%s: plugin '%s' lists no devices (ABI 1.4)", lp->path,
                lp->label);
  coil_error *e = lp->api.device_info(inst, device, out);
  if (e)
    return take_error(lp, e, "device_info", d);
  out->struct_size = sizeof *out;
  if (!out->name || !valid_text(out->name))
    out->name = "(unnamed device)";
  if (out->alignment < 16 || (out->alignment & (out->alignment - 1))) {
    coil_diag_at(d, lp->path, 0, 0, "plugin '%s': device %d's alignment is %u; expected a "
                 "power of two >= 16", lp->label, device, out->alignment);
    return -COIL_ERR_INTERNAL;
  }
  return 0;
}

int
coil_plugin_mem_alloc(const coil_loaded_plugin *lp, coil_plugin *inst, int device, size_t bytes,
                      void **out, coil_diag *d)
{
  *out = NULL;
  if (!lp->api.mem_alloc)
    return fail(d, COIL_ERR_UNSUPPORTED, "%s: plugin '%s' has no device memory (ABI 1.4)",
                lp->path, lp->label);
  void *p = NULL;
  coil_error *e = lp->api.mem_alloc(inst, device, bytes, &p);
  if (e)
    return take_error(lp, e, "mem_alloc", d);
  if (!p && bytes) {
    coil_diag_at(d, lp->path, 0, 0, "plugin '%s': mem_alloc of %zu bytes returned neither an "
                 "error nor memory", lp->label, bytes);
    return -COIL_ERR_INTERNAL;
  }
  *out = p;
  return 0;
}

void
coil_plugin_mem_free(const coil_loaded_plugin *lp, coil_plugin *inst, int device, void *ptr)
{
  if (ptr && lp->api.mem_free)
    lp->api.mem_free(inst, device, ptr);
}

int
coil_plugin_mem_copy(const coil_loaded_plugin *lp, coil_plugin *inst, coil_copy_kind kind,
                     int device, void *dst, const void *src, size_t bytes, coil_stream *stream,
                     coil_diag *d)
{
  if (!lp->api.mem_copy)
    return fail(d, COIL_ERR_UNSUPPORTED, "%s: plugin '%s' has no device memory (ABI 1.4)",
                lp->path, lp->label);
  coil_mem_copy_args args = {.struct_size = sizeof args, .kind = kind, .device = device,
                             .dst = dst, .src = src, .bytes = bytes, .stream = stream};
  coil_error *e = lp->api.mem_copy(inst, &args);
  return e ? take_error(lp, e, "mem_copy", d) : 0;
}

int
coil_plugin_stream_create(const coil_loaded_plugin *lp, coil_plugin *inst, int device,
                          coil_stream **out, coil_diag *d)
{
  *out = NULL;
  if (!lp->api.stream_create)
    return fail(d, COIL_ERR_UNSUPPORTED, "%s: plugin '%s' has no streams (ABI 1.4)", lp->path,
                lp->label);
  coil_stream *s = NULL;
  coil_error *e = lp->api.stream_create(inst, device, &s);
  if (e)
    return take_error(lp, e, "stream_create", d);
  if (!s)
    return fail(d, COIL_ERR_INTERNAL, "%s: plugin '%s': stream_create returned neither an "
                "error nor a stream", lp->path, lp->label);
  *out = s;
  return 0;
}

int
coil_plugin_stream_sync(const coil_loaded_plugin *lp, coil_plugin *inst, coil_stream *stream,
                        coil_diag *d)
{
  coil_error *e = lp->api.stream_sync ? lp->api.stream_sync(inst, stream) : NULL;
  return e ? take_error(lp, e, "stream_sync (work queued earlier)", d) : 0;
}

void
coil_plugin_stream_destroy(const coil_loaded_plugin *lp, coil_plugin *inst, coil_stream *stream)
{
  if (stream && lp->api.stream_destroy)
    lp->api.stream_destroy(inst, stream);
}

int
coil_plugin_event_record(const coil_loaded_plugin *lp, coil_plugin *inst, coil_stream *stream,
                         coil_event **out, coil_diag *d)
{
  *out = NULL;
  if (!lp->api.event_record)
    return fail(d, COIL_ERR_UNSUPPORTED, "%s: plugin '%s' has no events (ABI 1.4)", lp->path,
                lp->label);
  coil_event *ev = NULL;
  coil_error *e = lp->api.event_record(inst, stream, &ev);
  if (e)
    return take_error(lp, e, "event_record", d);
  if (!ev)
    return fail(d, COIL_ERR_INTERNAL, "%s: plugin '%s': event_record returned neither an "
                "error nor an event", lp->path, lp->label);
  *out = ev;
  return 0;
}

int
coil_plugin_event_wait(const coil_loaded_plugin *lp, coil_plugin *inst, coil_stream *stream,
                       coil_event *event, coil_diag *d)
{
  coil_error *e = lp->api.event_wait ? lp->api.event_wait(inst, stream, event) : NULL;
  return e ? take_error(lp, e, "event_wait", d) : 0;
}

int
coil_plugin_event_sync(const coil_loaded_plugin *lp, coil_plugin *inst, coil_event *event,
                       coil_diag *d)
{
  coil_error *e = lp->api.event_sync ? lp->api.event_sync(inst, event) : NULL;
  return e ? take_error(lp, e, "event_sync (work queued earlier)", d) : 0;
}

void
coil_plugin_event_destroy(const coil_loaded_plugin *lp, coil_plugin *inst, coil_event *event)
{
  if (event && lp->api.event_destroy)
    lp->api.event_destroy(inst, event);
}

void
coil_plugin_tensor_wrap(const coil_tensor *t, int64_t *strides, coil_plugin_tensor *out)
{
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= t->shape[i];
  }
  *out = (coil_plugin_tensor){
    .struct_size = sizeof *out,
    .data = t->data,
    .dtype = (int32_t)t->dtype,
    .rank = t->rank,
    .sizes = t->shape,
    .strides = strides,
    .device_type = COIL_DEVICE_CPU,
    .device_index = 0,
  };
}
