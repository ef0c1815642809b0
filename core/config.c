/* config.c — the layered configuration of config.h. inih splits the ini text into sections,
 * keys and values; this file checks what inih lets through silently (unknown sections, text
 * after a section header's ']', indented lines that inih would glue onto the previous value,
 * lines too long for its fixed buffer) by feeding it one line at a time from memory, which also
 * gives every key its line number. A file is checked completely into a staging list before any
 * of it is applied, so a rejected file changes nothing. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ini.h>

#include "cache_remote.h"
#include "coil/arena.h"

/* ---------------------------------------------------------------- the option table ---- */

typedef enum {
  TYPE_NAME,   /* a plugin name: letters, digits, '_', '-' */
  TYPE_MODE,   /* one of the modes */
  TYPE_CHOICE, /* one of the option's choices */
  TYPE_BOOL,   /* true/false, yes/no, on/off, 1/0; stored as "true" or "false" */
  TYPE_PATH,   /* a path, '~' expanded; empty turns the feature off */
  TYPE_PATHS,  /* ':'-separated paths, each '~' expanded; empty means none */
  TYPE_URL,    /* [cache] remote: empty, or a URL coil_remote_parse_url takes */
  TYPE_COUNT,  /* a whole number from 0 to 2^31 - 1 */
  TYPE_SIZE,   /* bytes, with an optional K, M or G suffix (powers of 1024); stored in bytes */
  TYPE_WORD,   /* letters, digits, '_', '-', '.' and ':' (a key prefix) */
} value_type;

static const struct option {
  const char *key;
  value_type type;
  const char *def; /* built-in default, before '~' expansion */
  const char *env; /* the environment variable of the env layer */
  const char *const *choices; /* TYPE_CHOICE: the values it takes, NULL-terminated */
  const char *section;        /* NULL: [coil]; "cache": [cache], known as "cache.KEY" */
} options[] = {
    {"backend", TYPE_NAME, "cpu", "COIL_BACKEND", NULL, NULL},               /* plugin used when none is named */
    {"mode", TYPE_MODE, "default", "COIL_MODE", NULL, NULL},                 /* a preset of modes[] below */
    {"plugin_path", TYPE_PATHS, "", "COIL_PLUGIN_PATH", NULL, NULL},         /* extra plugin directories */
    {"cache_dir", TYPE_PATH, "~/.cache/coil", "COIL_CACHE_DIR", NULL, NULL}, /* compile cache; "" = none */
    {"debug_dump", TYPE_PATH, "", "COIL_DEBUG_DUMP", NULL, NULL},            /* dump every stage here; "" = off */
    {"verify", TYPE_BOOL, "true", "COIL_VERIFY", NULL, NULL},                /* Wrapper IR verifier between passes */
    {"graph_capture", TYPE_BOOL, "false", "COIL_GRAPH_CAPTURE", NULL, NULL}, /* record launches, replay */
    {"autotune", TYPE_BOOL, "false", "COIL_AUTOTUNE", NULL, NULL},           /* benchmark kernel configs, keep best */
    /* convolution: a library call where the plugin claims it (auto), always a generated kernel,
     * or always a library call */
    {"convolution", TYPE_CHOICE, "auto", "COIL_CONVOLUTION",
     (const char *const[]){"auto", "generated", "library", NULL}, NULL},
    /* attention: the fused library op coil.attention where the plugin claims it (auto), the
     * decomposed bmm/softmax/bmm (generated), or the fused op whatever the plugin says */
    {"attention", TYPE_CHOICE, "auto", "COIL_ATTENTION",
     (const char *const[]){"auto", "generated", "library", NULL}, NULL},
    /* matmul: mm, bmm and addmm as library products where the plugin claims them (auto), always
     * the core's loop nest (generated), or always library products */
    {"matmul", TYPE_CHOICE, "auto", "COIL_MATMUL", (const char *const[]){"auto", "generated", "library", NULL}, NULL},
    /* decompose_k: an mm as a batched product of K's slices and a sum (where the plugin claims
     * aten.bmm.dtype) in this many slices where K divides; auto (today: never) or off */
    {"decompose_k", TYPE_CHOICE, "auto", "COIL_DECOMPOSE_K",
     (const char *const[]){"auto", "off", "2", "4", "8", "16", "32", "64", NULL}, NULL},
    /* [cache]: the remote compile cache on Redis (cache_remote.h, docs/config.md) */
    {"remote", TYPE_URL, "", "COIL_CACHE_REMOTE", NULL, "cache"},
    {"remote_key_file", TYPE_PATH, "", "COIL_CACHE_REMOTE_KEY_FILE", NULL, "cache"},
    {"remote_timeout_ms", TYPE_COUNT, "250", "COIL_CACHE_REMOTE_TIMEOUT_MS", NULL, "cache"},
    {"remote_max_entry", TYPE_SIZE, "64M", "COIL_CACHE_REMOTE_MAX_ENTRY", NULL, "cache"},
    {"remote_prefix", TYPE_WORD, "coil", "COIL_CACHE_REMOTE_PREFIX", NULL, "cache"},
    {"remote_ttl", TYPE_COUNT, "0", "COIL_CACHE_REMOTE_TTL", NULL, "cache"},
    {"remote_publish", TYPE_BOOL, "true", "COIL_CACHE_REMOTE_PUBLISH", NULL, "cache"},
};
enum { NOPTIONS = sizeof options / sizeof options[0] };

/* What each mode turns on: (key, value) pairs in key order, NULL-terminated. A preset never
 * sets `mode` itself. */
static const struct mode {
  const char *name;
  const char *origin;      /* the origin of the values it sets */
  const char *const *sets; /* key, value, key, value, ..., NULL */
  const char *what;        /* one sentence for coil config explain */
} modes[] = {
    {"default", "mode preset 'default'", (const char *const[]){NULL},
     "the baseline: quick compiles, and each call runs the generated wrapper as it is"},
    {"reduce-overhead", "mode preset 'reduce-overhead'",
     (const char *const[]){"graph_capture", "true", NULL},
     "for small inputs, where host time per call dominates: the wrapper's kernel launches are "
     "recorded once and replayed (CUDA graphs)"},
    {"max-autotune", "mode preset 'max-autotune'",
     (const char *const[]){"autotune", "true", "graph_capture", "true", NULL},
     "for the fastest kernels, at the cost of compile time: candidate kernel configurations "
     "are benchmarked and the fastest kept; launches are replayed as in reduce-overhead"},
};
enum { NMODES = sizeof modes / sizeof modes[0] };

/* The layers that are stored; the mode preset is derived from the effective mode. */
enum { L_DEFAULT, L_FILE, L_ENV, L_CLI, NLAYERS };

/* An ini file this large is not a coil configuration; the limit keeps `--config /dev/zero`
 * from reading forever. */
#define MAX_FILE_BYTES (1u << 20)

/* ---------------------------------------------------------------- the configuration ---- */

typedef struct setting {
  char *value;  /* NULL while this layer does not set the option */
  char *origin;
} setting;

typedef struct plugin {
  char *name;                     /* NAME of [plugin.NAME] */
  int n, cap;
  char **keys, **values, **origins; /* n each, in file order */
} plugin;

struct coil_config {
  setting set[NOPTIONS][NLAYERS];
  int nplugins, cap_plugins;
  plugin *plugins;
  int nfiles;
  char **files;                   /* ini files loaded, in order */
};

static char *
dup(const char *s)
{
  size_t n = strlen(s) + 1;
  return memcpy(coil_xmalloc(n), s, n);
}

static char *
dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
dupf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *out = coil_xmalloc((size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(out, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return out;
}

/* Option k's full name: "KEY" for [coil], "SECTION.KEY" otherwise. */
static void
full_name(int k, char *out, size_t n)
{
  if (options[k].section)
    snprintf(out, n, "%s.%s", options[k].section, options[k].key);
  else
    snprintf(out, n, "%s", options[k].key);
}

/* The option of a full name ("cache_dir", "cache.remote"). */
static int
find_option(const char *key)
{
  for (int k = 0; k < NOPTIONS; k++) {
    char name[96];
    full_name(k, name, sizeof name);
    if (strcmp(name, key) == 0)
      return k;
  }
  return -1;
}

/* The option KEY of ini section SECTION ("coil" or "cache"). */
static int
find_in_section(const char *section, const char *key)
{
  for (int k = 0; k < NOPTIONS; k++)
    if (strcmp(options[k].section ? options[k].section : "coil", section) == 0 &&
        strcmp(options[k].key, key) == 0)
      return k;
  return -1;
}

static void
put(setting *s, char *value, char *origin)
{
  free(s->value);
  free(s->origin);
  s->value = value;
  s->origin = origin;
}

/* ---------------------------------------------------------------- checking values ---- */

static bool
is_name_char(char ch)
{
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '-';
}

static bool
is_name(const char *s)
{
  if (!*s)
    return false;
  for (; *s; s++)
    if (!is_name_char(*s))
      return false;
  return true;
}

static bool
same_word(const char *a, const char *b) /* ASCII case-insensitive */
{
  for (; *a && *b; a++, b++) {
    char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
    if (x != *b)
      return false;
  }
  return *a == *b;
}

/* Appends PATH[0..n) to b with a leading "~" or "~/" replaced by $HOME. */
static int
expand_tilde(coil_strbuf *b, const char *key, const char *path, size_t n, char *why, size_t wn)
{
  if (n == 0 || path[0] != '~') {
    coil_strbuf_putn(b, path, n);
    return 0;
  }
  if (n > 1 && path[1] != '/') {
    snprintf(why, wn, "%s: only '~' and '~/...' are expanded, not '%.*s'", key, (int)n, path);
    return -1;
  }
  const char *home = getenv("HOME");
  if (!home || !*home) {
    snprintf(why, wn, "%s: cannot expand '~' in '%.*s': HOME is not set", key, (int)n, path);
    return -1;
  }
  size_t hn = strlen(home);
  while (hn > 1 && home[hn - 1] == '/')
    hn--;
  coil_strbuf_putn(b, home, hn);
  coil_strbuf_putn(b, path + 1, n - 1);
  return 0;
}

/* Checks VALUE for option k; on success *out is the malloc'd value to store (bools
 * canonical, '~' expanded). On failure writes the reason to why. */
static int
check_value(int k, const char *value, char **out, char *why, size_t wn)
{
  const struct option *o = &options[k];
  for (const char *p = value; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) {
      snprintf(why, wn, "%s: the value has a control character (byte 0x%02x)", o->key,
               (unsigned)(unsigned char)*p);
      return -1;
    }
  coil_strbuf b = {0};
  switch (o->type) {
  case TYPE_NAME: /* a name, or a list "a, b" (partial offload), kept as "a,b" */
    for (const char *s = value;;) {
      while (*s == ' ')
        s++;
      size_t len = strcspn(s, ",");
      char name[128];
      snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), s);
      for (size_t e = strlen(name); e > 0 && name[e - 1] == ' '; e--)
        name[e - 1] = 0;
      if (!is_name(name) || len >= sizeof name) {
        snprintf(why, wn, "%s must be a plugin name (letters, digits, '_' and '-') or a "
                 "comma-separated list of them, got '%s'", o->key, value);
        coil_strbuf_free(&b);
        return -1;
      }
      coil_strbuf_printf(&b, "%s%s", b.len ? "," : "", name);
      if (!s[len])
        break;
      s += len + 1;
    }
    break;
  case TYPE_CHOICE: {
    int m = 0;
    while (o->choices[m] && strcmp(o->choices[m], value) != 0)
      m++;
    if (!o->choices[m]) {
      coil_strbuf_printf(&b, "%s must be one of ", o->key);
      for (m = 0; o->choices[m]; m++)
        coil_strbuf_printf(&b, "%s%s", m ? ", " : "", o->choices[m]);
      snprintf(why, wn, "%s; got '%s'", b.s, value);
      coil_strbuf_free(&b);
      return -1;
    }
    coil_strbuf_puts(&b, value);
    break;
  }
  case TYPE_MODE: {
    int m = 0;
    while (m < NMODES && strcmp(modes[m].name, value) != 0)
      m++;
    if (m == NMODES) {
      coil_strbuf_printf(&b, "%s must be one of ", o->key);
      for (m = 0; m < NMODES; m++)
        coil_strbuf_printf(&b, "%s%s", m ? ", " : "", modes[m].name);
      snprintf(why, wn, "%s; got '%s'", b.s, value);
      coil_strbuf_free(&b);
      return -1;
    }
    coil_strbuf_puts(&b, value);
    break;
  }
  case TYPE_BOOL: {
    static const char *const words[][2] = {{"true", "true"}, {"yes", "true"}, {"on", "true"},
                                           {"1", "true"},     {"false", "false"}, {"no", "false"},
                                           {"off", "false"},  {"0", "false"}};
    const char *v = NULL;
    for (size_t i = 0; i < sizeof words / sizeof words[0] && !v; i++)
      v = same_word(value, words[i][0]) ? words[i][1] : NULL;
    if (!v) {
      snprintf(why, wn, "%s must be a bool (true/false, yes/no, on/off, 1/0), got '%s'", o->key,
               value);
      return -1;
    }
    coil_strbuf_puts(&b, v);
    break;
  }
  case TYPE_URL:
    if (*value) {
      coil_remote_url u;
      if (coil_remote_parse_url(value, &u, why, wn))
        return -1;
    }
    coil_strbuf_puts(&b, value);
    break;
  case TYPE_COUNT:
  case TYPE_SIZE: {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    unsigned long long mul = 1;
    if (o->type == TYPE_SIZE && *end && end != value) {
      const char *u = strchr("KMG", *end & ~0x20);
      for (const char *c = "KMG"; u && c <= u; c++)
        mul *= 1024;
      end += u != NULL;
    }
    if (end == value || *end || errno || value[0] == '-' || v > (1ull << 40) ||
        (o->type == TYPE_COUNT && v > 2147483647ull)) {
      snprintf(why, wn, o->type == TYPE_SIZE ? "%s must be a size in bytes (a number with an optional K, M or G), got '%s'"
                                              : "%s must be a whole number from 0 to 2147483647, got '%s'",
               o->key, value);
      return -1;
    }
    coil_strbuf_printf(&b, "%llu", v * mul);
    break;
  }
  case TYPE_WORD:
    for (const char *p = value; *p; p++)
      if (!is_name_char(*p) && *p != '.' && *p != ':') {
        snprintf(why, wn, "%s must be letters, digits, '_', '-', '.' and ':', got '%s'", o->key, value);
        return -1;
      }
    if (!*value) {
      snprintf(why, wn, "%s must not be empty", o->key);
      return -1;
    }
    coil_strbuf_puts(&b, value);
    break;
  case TYPE_PATH:
    if (expand_tilde(&b, o->key, value, strlen(value), why, wn)) {
      coil_strbuf_free(&b);
      return -1;
    }
    break;
  case TYPE_PATHS:
    for (const char *p = value; *p;) {
      size_t n = strcspn(p, ":");
      if (n == 0) {
        snprintf(why, wn,
                 "%s has an empty directory in '%s' (separate directories with one ':')",
                 o->key, value);
        coil_strbuf_free(&b);
        return -1;
      }
      if (p != value)
        coil_strbuf_puts(&b, ":");
      if (expand_tilde(&b, o->key, p, n, why, wn)) {
        coil_strbuf_free(&b);
        return -1;
      }
      p += n;
      if (*p == ':' && !*++p) {
        snprintf(why, wn, "%s ends with ':' in '%s'", o->key, value);
        coil_strbuf_free(&b);
        return -1;
      }
    }
    break;
  }
  *out = coil_strbuf_take(&b);
  return 0;
}

/* Levenshtein distance (99 past 31 characters): enough to suggest 'mode' for 'mdoe'. */
static int
distance(const char *a, const char *b)
{
  size_t na = strlen(a), nb = strlen(b);
  if (na > 31 || nb > 31)
    return 99;
  int row[32];
  for (size_t j = 0; j <= nb; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= na; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= nb; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      best = up + 1 < best ? up + 1 : best;
      best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
      row[j] = best;
      diag = up;
    }
  }
  return row[nb];
}

/* section: "coil" or "cache" (an ini section), or NULL (a full name from the command line). */
static void
unknown_key(const char *section, const char *key, char *why, size_t wn)
{
  coil_strbuf b = {0};
  if (section)
    coil_strbuf_printf(&b, "unknown key '%s' in [%s] (known: ", key, section);
  else
    coil_strbuf_printf(&b, "unknown option '%s' (known: ", key);
  int near = -1, best = 3, listed = 0;
  for (int k = 0; k < NOPTIONS; k++) {
    char name[96];
    full_name(k, name, sizeof name);
    if (section && strcmp(options[k].section ? options[k].section : "coil", section) != 0)
      continue;
    const char *shown = section ? options[k].key : name;
    coil_strbuf_printf(&b, "%s%s", listed++ ? ", " : "", shown);
    int dist = distance(key, shown);
    if (dist < best) {
      best = dist;
      near = k;
    }
  }
  coil_strbuf_puts(&b, ")");
  if (near >= 0) {
    char name[96];
    full_name(near, name, sizeof name);
    coil_strbuf_printf(&b, "; did you mean '%s'?", section ? options[near].key : name);
  }
  snprintf(why, wn, "%s", b.s);
  coil_strbuf_free(&b);
}

/* ---------------------------------------------------------------- public: basics ---- */

coil_config *
coil_config_new(void)
{
  coil_config *c = coil_xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  for (int k = 0; k < NOPTIONS; k++) {
    char why[512], *v;
    if (check_value(k, options[k].def, &v, why, sizeof why) == 0) {
      put(&c->set[k][L_DEFAULT], v, dup("default"));
    } else {
      /* only '~' without HOME can fail here: the feature is off, and explain says why */
      put(&c->set[k][L_DEFAULT], dup(""), dup("default (HOME is not set)"));
    }
  }
  return c;
}

void
coil_config_free(coil_config *c)
{
  if (!c)
    return;
  for (int k = 0; k < NOPTIONS; k++)
    for (int l = 0; l < NLAYERS; l++)
      put(&c->set[k][l], NULL, NULL);
  for (int i = 0; i < c->nplugins; i++) {
    plugin *p = &c->plugins[i];
    for (int j = 0; j < p->n; j++) {
      free(p->keys[j]);
      free(p->values[j]);
      free(p->origins[j]);
    }
    free(p->keys);
    free(p->values);
    free(p->origins);
    free(p->name);
  }
  free(c->plugins);
  for (int i = 0; i < c->nfiles; i++)
    free(c->files[i]);
  free(c->files);
  free(c);
}

static const struct mode *
effective_mode(const coil_config *c)
{
  const char *name = NULL;
  int k = find_option("mode");
  for (int l = NLAYERS - 1; l >= 0 && !name; l--)
    name = c->set[k][l].value;
  for (int m = 0; m < NMODES; m++)
    if (strcmp(modes[m].name, name) == 0)
      return &modes[m];
  return &modes[0]; /* not reached: every stored mode was checked */
}

/* The effective value of option k and its origin. */
static void
effective(const coil_config *c, int k, const char **value, const char **origin)
{
  for (int l = NLAYERS - 1; l > L_DEFAULT; l--)
    if (c->set[k][l].value) {
      *value = c->set[k][l].value;
      *origin = c->set[k][l].origin;
      return;
    }
  const struct mode *m = effective_mode(c);
  for (const char *const *s = m->sets; *s; s += 2)
    if (!options[k].section && strcmp(s[0], options[k].key) == 0) {
      *value = s[1];
      *origin = m->origin;
      return;
    }
  *value = c->set[k][L_DEFAULT].value;
  *origin = c->set[k][L_DEFAULT].origin;
}

const char *
coil_config_get(const coil_config *c, const char *key)
{
  int k = find_option(key);
  const char *v = NULL, *o;
  if (k >= 0)
    effective(c, k, &v, &o);
  return v;
}

const char *
coil_config_origin(const coil_config *c, const char *key)
{
  int k = find_option(key);
  const char *v, *o = NULL;
  if (k >= 0)
    effective(c, k, &v, &o);
  return o;
}

bool
coil_config_get_bool(const coil_config *c, const char *key)
{
  const char *v = coil_config_get(c, key);
  return v && strcmp(v, "true") == 0;
}

int
coil_config_set(coil_config *c, const char *key, const char *value, coil_diag *d)
{
  char why[1024], *v;
  int k = find_option(key);
  if (k < 0) {
    unknown_key(NULL, key, why, sizeof why);
    return coil_diag_at(d, "command line", 0, 0, "%s", why);
  }
  if (check_value(k, value, &v, why, sizeof why))
    return coil_diag_at(d, "command line", 0, 0, "%s", why);
  put(&c->set[k][L_CLI], v, dup("command line"));
  return 0;
}

int
coil_config_apply_env(coil_config *c, coil_diag *d)
{
  char *vals[NOPTIONS] = {0};
  for (int k = 0; k < NOPTIONS; k++) {
    const char *e = getenv(options[k].env);
    if (!e || !*e)
      continue;
    char why[1024];
    if (check_value(k, e, &vals[k], why, sizeof why)) {
      for (int j = 0; j < k; j++)
        free(vals[j]);
      return coil_diag_at(d, "environment", 0, 0, "%s=%s: %s", options[k].env, e, why);
    }
  }
  /* the layer is today's environment: a variable unset since the last call no longer counts */
  for (int k = 0; k < NOPTIONS; k++)
    put(&c->set[k][L_ENV], vals[k], vals[k] ? dupf("environment %s", options[k].env) : NULL);
  return 0;
}

/* ---------------------------------------------------------------- plugin sections ---- */

static plugin *
find_plugin(const coil_config *c, const char *name)
{
  for (int i = 0; i < c->nplugins; i++)
    if (strcmp(c->plugins[i].name, name) == 0)
      return &c->plugins[i];
  return NULL;
}

static void
plugin_put(coil_config *c, const char *name, const char *key, const char *value, char *origin)
{
  plugin *p = find_plugin(c, name);
  if (!p) {
    if (c->nplugins == c->cap_plugins) {
      c->cap_plugins = c->cap_plugins ? 2 * c->cap_plugins : 4;
      c->plugins = coil_xrealloc(c->plugins, sizeof *c->plugins * (size_t)c->cap_plugins);
    }
    p = &c->plugins[c->nplugins++];
    memset(p, 0, sizeof *p);
    p->name = dup(name);
  }
  for (int j = 0; j < p->n; j++)
    if (strcmp(p->keys[j], key) == 0) {
      free(p->values[j]);
      free(p->origins[j]);
      p->values[j] = dup(value);
      p->origins[j] = origin;
      return;
    }
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 8;
    p->keys = coil_xrealloc(p->keys, sizeof(char *) * (size_t)p->cap);
    p->values = coil_xrealloc(p->values, sizeof(char *) * (size_t)p->cap);
    p->origins = coil_xrealloc(p->origins, sizeof(char *) * (size_t)p->cap);
  }
  p->keys[p->n] = dup(key);
  p->values[p->n] = dup(value);
  p->origins[p->n] = origin;
  p->n++;
}

int
coil_config_plugin_count(const coil_config *c)
{
  return c->nplugins;
}

const char *
coil_config_plugin_name(const coil_config *c, int i)
{
  return i >= 0 && i < c->nplugins ? c->plugins[i].name : NULL;
}

int
coil_config_general_options(const coil_config *c, const char **keys, const char **values)
{
  static const char *const names[COIL_CONFIG_GENERAL] = {"mode", "graph_capture", "autotune"};
  static const char *const prefixed[COIL_CONFIG_GENERAL] = {"coil.mode", "coil.graph_capture", "coil.autotune"};
  for (int i = 0; i < COIL_CONFIG_GENERAL; i++) {
    keys[i] = prefixed[i];
    values[i] = coil_config_get(c, names[i]);
  }
  return COIL_CONFIG_GENERAL;
}

int
coil_config_plugin_options(const coil_config *c, const char *name, const char *const **keys,
                           const char *const **values, const char *const **origins)
{
  const plugin *p = find_plugin(c, name);
  if (keys)
    *keys = p ? (const char *const *)p->keys : NULL;
  if (values)
    *values = p ? (const char *const *)p->values : NULL;
  if (origins)
    *origins = p ? (const char *const *)p->origins : NULL;
  return p ? p->n : 0;
}

/* ---------------------------------------------------------------- reading ini files ---- */

typedef struct staged {
  char *section; /* "coil" or "plugin.NAME" */
  char *key, *value;
  int line;
} staged;

/* The state of one load: the text, the line inih is on, and what it found so far. */
typedef struct loader {
  const char *file;     /* for messages and origins */
  const char *text, *pos, *end;
  int line;             /* lines handed to inih so far = the line its handler is on */
  bool after_key;       /* a key since the last section header: inih would read an indented
                           line as a continuation of that key's value */
  int err_line;         /* line of the first error found here, 0 if none */
  char why[1024];       /* its message */
  int n, cap;
  staged *items;
} loader;

static void reject(loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the first error of a load, on the line inih is on. */
static void
reject(loader *ld, const char *fmt, ...)
{
  if (ld->err_line)
    return;
  ld->err_line = ld->line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ld->why, sizeof ld->why, fmt, ap);
  va_end(ap);
}

/* section-header = "[" ( "coil" | "plugin." NAME ) "]" [ ";" comment ] */
static void
check_header(loader *ld, const char *open, const char *eol)
{
  const char *close = memchr(open, ']', (size_t)(eol - open));
  if (!close) {
    const char *e = eol;
    while (e > open && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
      e--;
    reject(ld, "the section header '%.*s' has no ']'", (int)(e - open), open);
    return;
  }
  char name[INI_MAX_LINE];
  snprintf(name, sizeof name, "%.*s", (int)(close - open - 1), open + 1);
  const char *rest = close + 1;
  while (rest < eol && (*rest == ' ' || *rest == '\t' || *rest == '\r'))
    rest++;
  if (rest < eol && !(*rest == ';' && (rest[-1] == ' ' || rest[-1] == '\t'))) {
    char junk[INI_MAX_LINE];
    snprintf(junk, sizeof junk, "%.*s", (int)(eol - rest), rest);
    reject(ld, "unexpected text '%s' after the section header [%s]", junk, name);
    return;
  }
  if (strcmp(name, "coil") == 0 || strcmp(name, "cache") == 0)
    return;
  if (strncmp(name, "plugin.", 7) != 0) {
    reject(ld, "unknown section [%s] (known: [coil], [cache], [plugin.NAME])", name);
    return;
  }
  if (!is_name(name + 7))
    reject(ld, "bad plugin section [%s]: NAME in [plugin.NAME] must be letters, digits, '_' "
               "and '-'",
           name);
}

/* inih's reader: hands it the next line, after the checks inih does not make. */
static char *
next_line(char *buf, int size, void *stream)
{
  loader *ld = stream;
  if (ld->err_line || ld->pos >= ld->end)
    return NULL; /* the first error ends the file */
  const char *nl = memchr(ld->pos, '\n', (size_t)(ld->end - ld->pos));
  const char *eol = nl ? nl : ld->end, *start = ld->pos;
  ld->pos = nl ? nl + 1 : ld->end;
  ld->line++;
  if (memchr(start, '\0', (size_t)(eol - start))) {
    reject(ld, "the line has a NUL byte; an ini file is text");
    return NULL;
  }
  /* inih's buffer holds SIZE bytes: the line, "\r\n" and a NUL (197 characters for inih's
   * default INI_MAX_LINE of 200); it would silently cut a longer line */
  size_t len = (size_t)(eol - start) - (eol > start && eol[-1] == '\r');
  if (len + 3 > (size_t)size) {
    reject(ld, "the line is %zu characters long; coil's ini reader (inih) takes at most %d", len,
           size - 3);
    return NULL;
  }
  const char *p = start;
  if (ld->line == 1 && eol - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
    p += 3; /* inih skips a UTF-8 byte-order mark */
  const char *q = p;
  while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\f' || *q == '\v'))
    q++;
  if (q < eol && *q != ';' && *q != '#') {
    if (q > p && ld->after_key) {
      reject(ld,
             "indented line: inih would append it to the value above; coil takes one line per "
             "value, so remove the indentation");
      return NULL;
    }
    if (*q == '[') {
      check_header(ld, q, eol);
      if (ld->err_line)
        return NULL;
      ld->after_key = false;
    } else {
      ld->after_key = true;
    }
  }
  memcpy(buf, start, (size_t)(ld->pos - start));
  buf[ld->pos - start] = '\0';
  return buf;
}

static bool
bad_chars(const char *s)
{
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f)
      return true;
  return false;
}

/* inih's handler: one key = value in a section; checks it and stages it. */
static int
on_key(void *user, const char *section, const char *key, const char *value)
{
  loader *ld = user;
  if (ld->err_line)
    return 1;
  if (!*section) {
    reject(ld, "key '%s' comes before any section; put it under [coil], [cache] or [plugin.NAME]", key);
    return 0;
  }
  if (!*key) {
    reject(ld, "missing key before '=' in [%s]", section);
    return 0;
  }
  for (const char *p = key; *p; p++)
    if (!is_name_char(*p) && *p != '.') {
      reject(ld, "bad key '%s' in [%s]: keys are letters, digits, '_', '-' and '.'", key,
             section);
      return 0;
    }
  char *v = NULL;
  if (strcmp(section, "coil") == 0 || strcmp(section, "cache") == 0) {
    int k = find_in_section(section, key);
    if (k < 0) {
      char why[1024];
      unknown_key(section, key, why, sizeof why);
      reject(ld, "%s", why);
      return 0;
    }
    char why[1024];
    if (check_value(k, value, &v, why, sizeof why)) {
      reject(ld, "%s", why);
      return 0;
    }
  } else if (bad_chars(value)) {
    reject(ld, "the value of '%s' in [%s] has a control character", key, section);
    return 0;
  } else {
    v = dup(value);
  }
  for (int i = 0; i < ld->n; i++)
    if (strcmp(ld->items[i].section, section) == 0 && strcmp(ld->items[i].key, key) == 0) {
      reject(ld, "duplicate key '%s' in [%s]; it was first set on line %d", key, section,
             ld->items[i].line);
      free(v);
      return 0;
    }
  if (ld->n == ld->cap) {
    ld->cap = ld->cap ? 2 * ld->cap : 16;
    ld->items = coil_xrealloc(ld->items, sizeof *ld->items * (size_t)ld->cap);
  }
  ld->items[ld->n++] = (staged){dup(section), dup(key), v, ld->line};
  return 1;
}

/* What inih found wrong on line `line`, which it could not split into key = value. */
static void
describe_syntax_error(const loader *ld, int line, char *why, size_t wn)
{
  const char *p = ld->text;
  for (int i = 1; i < line && p < ld->end; i++) {
    const char *nl = memchr(p, '\n', (size_t)(ld->end - p));
    p = nl ? nl + 1 : ld->end;
  }
  const char *eol = memchr(p, '\n', (size_t)(ld->end - p));
  eol = eol ? eol : ld->end;
  while (p < eol && (*p == ' ' || *p == '\t'))
    p++;
  while (eol > p && (eol[-1] == ' ' || eol[-1] == '\t' || eol[-1] == '\r'))
    eol--;
  int n = (int)(eol - p) > 60 ? 60 : (int)(eol - p);
  snprintf(why, wn, "expected 'key = value', '[section]' or a ';' comment, got '%.*s%s'", n, p,
           eol - p > 60 ? "..." : "");
}

static int
load_text(coil_config *c, const char *file, const char *text, size_t len, coil_diag *d)
{
  loader ld = {.file = file, .text = text, .pos = text, .end = text + len};
  int r = ini_parse_stream(next_line, &ld, on_key, &ld);
  int rc = 0;
  if (r > 0 && (!ld.err_line || r < ld.err_line)) {
    char why[256];
    describe_syntax_error(&ld, r, why, sizeof why);
    rc = coil_diag_at(d, file, r, 0, "%s", why);
  } else if (ld.err_line) {
    rc = coil_diag_at(d, file, ld.err_line, 0, "%s", ld.why);
  } else if (r != 0) {
    rc = coil_diag_at(d, file, 0, 0, "inih failed (status %d)", r);
  }
  for (int i = 0; i < ld.n; i++) {
    staged *s = &ld.items[i];
    if (rc == 0) {
      char *origin = dupf("%s:%d", file, s->line);
      if (strcmp(s->section, "coil") == 0 || strcmp(s->section, "cache") == 0)
        put(&c->set[find_in_section(s->section, s->key)][L_FILE], s->value, origin);
      else {
        plugin_put(c, s->section + 7, s->key, s->value, origin);
        free(s->value);
      }
    } else {
      free(s->value);
    }
    free(s->section);
    free(s->key);
  }
  free(ld.items);
  if (rc == 0) {
    c->files = coil_xrealloc(c->files, sizeof(char *) * (size_t)(c->nfiles + 1));
    c->files[c->nfiles++] = dup(file);
  }
  return rc;
}

int
coil_config_load_string(coil_config *c, const char *name, const char *text, coil_diag *d)
{
  return load_text(c, name, text, strlen(text), d);
}

int
coil_config_load_file(coil_config *c, const char *path, coil_diag *d)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return coil_diag_at(d, path, 0, 0, "cannot open: %s", strerror(errno));
  coil_strbuf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len <= MAX_FILE_BYTES)
    coil_strbuf_putn(&b, chunk, n);
  int err = ferror(f) ? errno : 0;
  fclose(f);
  int rc;
  if (err)
    rc = coil_diag_at(d, path, 0, 0, "cannot read: %s", strerror(err));
  else if (b.len > MAX_FILE_BYTES)
    rc = coil_diag_at(d, path, 0, 0, "more than %u bytes; not a coil ini file", MAX_FILE_BYTES);
  else
    rc = load_text(c, path, b.s ? b.s : "", b.len, d);
  coil_strbuf_free(&b);
  return rc;
}

const char *
coil_config_file_default(const char *flag)
{
  if (flag)
    return flag;
  const char *env = getenv("COIL_CONFIG");
  if (env && *env)
    return env;
  struct stat st;
  return stat("coil.ini", &st) == 0 ? "coil.ini" : NULL;
}

/* ---------------------------------------------------------------- explain ---- */

/* One "key = value ; origin" line, padded so the '=' and ';' of a section line up. */
static void
explain_line(coil_strbuf *out, int kw, int vw, const char *key, const char *value,
             const char *origin)
{
  coil_strbuf_printf(out, "%-*s = %-*s ; %s\n", kw, key, vw, value, origin);
}

/* TEXT as ";   " comment lines of at most 96 columns, broken between words. */
static void
comment_wrapped(coil_strbuf *out, const char *text)
{
  while (*text) {
    size_t n = strlen(text);
    if (n > 92) {
      n = 92;
      while (n > 0 && text[n] != ' ')
        n--;
      n = n ? n : strcspn(text, " ");
    }
    coil_strbuf_printf(out, ";   %.*s\n", (int)n, text);
    text += n;
    while (*text == ' ')
      text++;
  }
}

void
coil_config_explain(const coil_config *c, coil_strbuf *out)
{
  coil_strbuf_puts(out, "; every option of coil, its value, and where the value comes from\n"
                        "; (lowest first: default < mode preset < ini file < environment "
                        "COIL_<KEY> < command line)\n");
  if (!c->nfiles)
    coil_strbuf_puts(out, "; ini file: none\n");
  for (int i = 0; i < c->nfiles; i++)
    coil_strbuf_printf(out, "; ini file: %s\n", c->files[i]);

  const char *vals[NOPTIONS], *origins[NOPTIONS];
  int kw = 0, vw = 0;
  for (int k = 0; k < NOPTIONS; k++) {
    effective(c, k, &vals[k], &origins[k]);
    kw = (int)strlen(options[k].key) > kw ? (int)strlen(options[k].key) : kw;
    vw = (int)strlen(vals[k]) > vw ? (int)strlen(vals[k]) : vw;
  }
  vw = vw > 40 ? 40 : vw;
  for (int sec = 0; sec < 2; sec++) {
    coil_strbuf_puts(out, sec ? "\n[cache]\n" : "\n[coil]\n");
    kw = vw = 0; /* each section aligned on its own */
    for (int k = 0; k < NOPTIONS; k++)
      if ((options[k].section != NULL) == sec) {
        kw = (int)strlen(options[k].key) > kw ? (int)strlen(options[k].key) : kw;
        vw = (int)strlen(vals[k]) > vw ? (int)strlen(vals[k]) : vw;
      }
    vw = vw > 40 ? 40 : vw;
    for (int k = 0; k < NOPTIONS; k++) {
      if ((options[k].section != NULL) != sec)
        continue;
      char shown[512];
      if (options[k].type == TYPE_URL) /* the password stays out of what explain prints */
        coil_remote_redact(vals[k], shown, sizeof shown);
      else
        snprintf(shown, sizeof shown, "%s", vals[k]);
      explain_line(out, kw, vw, options[k].key, shown, origins[k]);
    }
  }

  for (int i = 0; i < c->nplugins; i++) {
    const plugin *p = &c->plugins[i];
    kw = vw = 0;
    for (int j = 0; j < p->n; j++) {
      kw = (int)strlen(p->keys[j]) > kw ? (int)strlen(p->keys[j]) : kw;
      vw = (int)strlen(p->values[j]) > vw ? (int)strlen(p->values[j]) : vw;
    }
    vw = vw > 40 ? 40 : vw;
    coil_strbuf_printf(out, "\n[plugin.%s]\n", p->name);
    for (int j = 0; j < p->n; j++)
      explain_line(out, kw, vw, p->keys[j], p->values[j], p->origins[j]);
  }

  coil_strbuf_puts(out, "\n; what each mode turns on (a preset sits below the ini file, "
                        "which can turn it off again):\n");
  for (int m = 0; m < NMODES; m++) {
    coil_strbuf_printf(out, "; mode=%s sets", modes[m].name);
    if (!modes[m].sets[0])
      coil_strbuf_puts(out, " nothing: every option keeps its default");
    for (const char *const *s = modes[m].sets; *s; s += 2)
      coil_strbuf_printf(out, "%s %s = %s", s == modes[m].sets ? ":" : ",", s[0], s[1]);
    coil_strbuf_puts(out, "\n");
    comment_wrapped(out, modes[m].what);
  }
}
