/* test_config.c — the layered ini configuration (core/config.h). Each precedence layer
 * (default < mode preset < ini file < environment < command line) wins over the ones below it
 * and loses to the ones above, whatever order they are applied in; mode presets sit below the
 * file even when the mode comes from above it; every value reports its origin; [plugin.NAME]
 * sections keep their keys in order; '~' expands from $HOME; `coil config explain` text is
 * exact and loads back; examples/coil.ini loads; and every file of the malformed corpus
 * core/tests/bad/ini is rejected with the message its first line expects:
 *   ; expect: NAME.ini:LINE: error: what
 *
 * Criterion runs each test in its own process, so setenv, unsetenv and chdir stay in a test. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

/* ---------------------------------------------------------------- helpers ---- */

static const char *const env_vars[] = {"COIL_BACKEND",    "COIL_MODE",    "COIL_PLUGIN_PATH",
                                        "COIL_CACHE_DIR",  "COIL_DEBUG_DUMP", "COIL_VERIFY",
                                        "COIL_GRAPH_CAPTURE", "COIL_AUTOTUNE", "COIL_CONVOLUTION", "COIL_CONFIG"};

/* Every test starts from a known environment: no COIL_* variables, HOME=/home/tester. */
static void
clean_env(void)
{
  for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
    unsetenv(env_vars[i]);
  setenv("HOME", "/home/tester", 1);
}

TestSuite(config, .init = clean_env);

static coil_config *
load(const char *text)
{
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_load_string(c, "t.ini", text, &d), 0, "%s", d.msg);
  return c;
}

/* TEXT is rejected with exactly MSG, and the configuration keeps its defaults. */
static void
rejects(const char *text, const char *msg)
{
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_load_string(c, "t.ini", text, &d), -1, "accepted: %s", text);
  cr_assert_str_eq(d.msg, msg);
  cr_assert_str_eq(coil_config_origin(c, "backend"), "default");
  cr_assert_str_eq(coil_config_origin(c, "mode"), "default");
  cr_assert_eq(coil_config_plugin_count(c), 0);
  coil_config_free(c);
}

static void
expect(const coil_config *c, const char *key, const char *value, const char *origin)
{
  const char *v = coil_config_get(c, key), *o = coil_config_origin(c, key);
  cr_assert_not_null(v, "%s has no value", key);
  cr_assert_str_eq(v, value, "%s = '%s', expected '%s'", key, v, value);
  cr_assert_str_eq(o, origin, "%s comes from '%s', expected '%s'", key, o, origin);
}

static char *
slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  char *s = NULL;
  size_t n = 0, cap = 0;
  for (int ch; (ch = fgetc(f)) != EOF;) {
    if (n + 2 > cap)
      s = realloc(s, cap = cap ? 2 * cap : 256);
    s[n++] = (char)ch;
  }
  fclose(f);
  s = s ? s : malloc(1);
  s[n] = '\0';
  return s;
}

/* ---------------------------------------------------------------- defaults ---- */

Test(config, defaults)
{
  coil_config *c = coil_config_new();
  expect(c, "backend", "cpu", "default");
  expect(c, "mode", "default", "default");
  expect(c, "plugin_path", "", "default");
  expect(c, "cache_dir", "/home/tester/.cache/coil", "default");
  expect(c, "debug_dump", "", "default");
  expect(c, "verify", "true", "default");
  expect(c, "graph_capture", "false", "default");
  expect(c, "autotune", "false", "default");
  expect(c, "convolution", "auto", "default");
  cr_assert(coil_config_get_bool(c, "verify"));
  cr_assert_not(coil_config_get_bool(c, "autotune"));
  cr_assert_null(coil_config_get(c, "threads"));
  cr_assert_null(coil_config_origin(c, "threads"));
  cr_assert_not(coil_config_get_bool(c, "threads"));
  cr_assert_eq(coil_config_plugin_count(c), 0);
  cr_assert_null(coil_config_plugin_name(c, 0));
  coil_config_free(c);
}

Test(config, default_cache_dir_without_home)
{
  unsetenv("HOME");
  coil_config *c = coil_config_new();
  expect(c, "cache_dir", "", "default (HOME is not set)");
  coil_config_free(c);
  setenv("HOME", "/srv/build/", 1); /* a trailing '/' is not doubled */
  c = coil_config_new();
  expect(c, "cache_dir", "/srv/build/.cache/coil", "default");
  coil_config_free(c);
}

/* ---------------------------------------------------------------- precedence ---- */

static const char layered_ini[] = "; one key per layer\n"
                                  "[coil]\n"
                                  "backend = filebk\n"
                                  "debug_dump = /tmp/from-file\n"
                                  "verify = off\n";

Test(config, each_layer_wins_over_the_one_below)
{
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  expect(c, "backend", "cpu", "default");

  cr_assert_eq(coil_config_load_string(c, "t.ini", layered_ini, &d), 0, "%s", d.msg);
  expect(c, "backend", "filebk", "t.ini:3");
  expect(c, "debug_dump", "/tmp/from-file", "t.ini:4");
  expect(c, "verify", "false", "t.ini:5");

  setenv("COIL_BACKEND", "envbk", 1);
  setenv("COIL_DEBUG_DUMP", "/tmp/from-env", 1);
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  expect(c, "backend", "envbk", "environment COIL_BACKEND");
  expect(c, "debug_dump", "/tmp/from-env", "environment COIL_DEBUG_DUMP");
  expect(c, "verify", "false", "t.ini:5"); /* not in the environment: the file still holds */

  cr_assert_eq(coil_config_set(c, "backend", "clibk", &d), 0, "%s", d.msg);
  expect(c, "backend", "clibk", "command line");
  expect(c, "debug_dump", "/tmp/from-env", "environment COIL_DEBUG_DUMP");
  expect(c, "mode", "default", "default");
  coil_config_free(c);
}

Test(config, layers_do_not_depend_on_call_order)
{
  setenv("COIL_BACKEND", "envbk", 1);
  setenv("COIL_DEBUG_DUMP", "/tmp/from-env", 1);
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  /* the command line first, the file last: each still lands in its own layer */
  cr_assert_eq(coil_config_set(c, "backend", "clibk", &d), 0, "%s", d.msg);
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_config_load_string(c, "t.ini", layered_ini, &d), 0, "%s", d.msg);
  expect(c, "backend", "clibk", "command line");
  expect(c, "debug_dump", "/tmp/from-env", "environment COIL_DEBUG_DUMP");
  expect(c, "verify", "false", "t.ini:5");
  coil_config_free(c);
}

Test(config, later_call_in_one_layer_overrides)
{
  coil_config *c = load("[coil]\nbackend = one\nmode = reduce-overhead\n");
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_load_string(c, "u.ini", "[coil]\nbackend = two\n", &d), 0, "%s", d.msg);
  expect(c, "backend", "two", "u.ini:2");
  expect(c, "mode", "reduce-overhead", "t.ini:3"); /* the second file did not set it */
  cr_assert_eq(coil_config_set(c, "backend", "three", &d), 0);
  cr_assert_eq(coil_config_set(c, "backend", "four", &d), 0);
  expect(c, "backend", "four", "command line");
  coil_config_free(c);
}

Test(config, empty_environment_variable_is_unset)
{
  setenv("COIL_MODE", "", 1);
  coil_config *c = load("[coil]\nmode = max-autotune\n");
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  expect(c, "mode", "max-autotune", "t.ini:2");
  coil_config_free(c);
}

Test(config, every_key_has_its_environment_variable)
{
  static const char *const pairs[][3] = {
      {"COIL_BACKEND", "backend", "hip"},
      {"COIL_MODE", "mode", "reduce-overhead"},
      {"COIL_PLUGIN_PATH", "plugin_path", "/a:/b"},
      {"COIL_CACHE_DIR", "cache_dir", "/var/cache/coil"},
      {"COIL_DEBUG_DUMP", "debug_dump", "dump"},
      {"COIL_VERIFY", "verify", "false"},
      {"COIL_GRAPH_CAPTURE", "graph_capture", "true"},
      {"COIL_AUTOTUNE", "autotune", "true"},
      {"COIL_CONVOLUTION", "convolution", "generated"},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
    setenv(pairs[i][0], pairs[i][2], 1);
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    char origin[64];
    snprintf(origin, sizeof origin, "environment %s", pairs[i][0]);
    expect(c, pairs[i][1], pairs[i][2], origin);
  }
  coil_config_free(c);
}

/* ---------------------------------------------------------------- mode presets ---- */

Test(config, mode_presets)
{
  static const char *const want[][3] = {/* mode, graph_capture, autotune */
                                        {"default", "false", "false"},
                                        {"reduce-overhead", "true", "false"},
                                        {"max-autotune", "true", "true"}};
  for (int i = 0; i < 3; i++) {
    coil_config *c = coil_config_new();
    coil_diag d = {{0}};
    cr_assert_eq(coil_config_set(c, "mode", want[i][0], &d), 0, "%s", d.msg);
    char preset[64];
    snprintf(preset, sizeof preset, "mode preset '%s'", want[i][0]);
    expect(c, "graph_capture", want[i][1],
           strcmp(want[i][1], "true") == 0 ? preset : "default");
    expect(c, "autotune", want[i][2], strcmp(want[i][2], "true") == 0 ? preset : "default");
    expect(c, "verify", "true", "default"); /* no mode touches it */
    coil_config_free(c);
  }
}

Test(config, preset_sits_below_the_file_even_when_the_mode_comes_from_above)
{
  /* the file turns graph_capture off; the mode comes from the command line */
  coil_config *c = load("[coil]\ngraph_capture = no\n");
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_set(c, "mode", "max-autotune", &d), 0);
  expect(c, "mode", "max-autotune", "command line");
  expect(c, "graph_capture", "false", "t.ini:2");
  expect(c, "autotune", "true", "mode preset 'max-autotune'");
  /* the environment sets graph_capture above the file */
  setenv("COIL_GRAPH_CAPTURE", "1", 1);
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  expect(c, "graph_capture", "true", "environment COIL_GRAPH_CAPTURE");
  coil_config_free(c);
}

Test(config, mode_is_resolved_before_its_preset_applies)
{
  /* the file asks for max-autotune, the environment overrides the mode back to default:
   * the preset that applies is default's, which sets nothing */
  setenv("COIL_MODE", "default", 1);
  coil_config *c = load("[coil]\nmode = max-autotune\n");
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  expect(c, "mode", "default", "environment COIL_MODE");
  expect(c, "autotune", "false", "default");
  expect(c, "graph_capture", "false", "default");
  /* and the mode from the environment picks the preset too */
  setenv("COIL_MODE", "reduce-overhead", 1);
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  expect(c, "graph_capture", "true", "mode preset 'reduce-overhead'");
  expect(c, "autotune", "false", "default");
  /* a variable unset since is gone from the layer: the file's mode is back */
  unsetenv("COIL_MODE");
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  expect(c, "mode", "max-autotune", "t.ini:2");
  expect(c, "autotune", "true", "mode preset 'max-autotune'");
  coil_config_free(c);
}

Test(config, file_mode_preset)
{
  coil_config *c = load("[coil]\nmode = max-autotune\n");
  expect(c, "mode", "max-autotune", "t.ini:2");
  expect(c, "autotune", "true", "mode preset 'max-autotune'");
  cr_assert(coil_config_get_bool(c, "autotune"));
  coil_config_free(c);
}

/* ---------------------------------------------------------------- values ---- */

Test(config, bool_spellings)
{
  static const char *const spell[][2] = {
      {"true", "true"}, {"TRUE", "true"}, {"yes", "true"},   {"On", "true"},   {"1", "true"},
      {"false", "false"}, {"No", "false"}, {"off", "false"}, {"0", "false"}, {"FaLsE", "false"}};
  for (size_t i = 0; i < sizeof spell / sizeof spell[0]; i++) {
    coil_config *c = coil_config_new();
    coil_diag d = {{0}};
    cr_assert_eq(coil_config_set(c, "verify", spell[i][0], &d), 0, "%s: %s", spell[i][0], d.msg);
    expect(c, "verify", spell[i][1], "command line");
    coil_config_free(c);
  }
  static const char *const bad[] = {"", "2", "y", "truee", "enabled", "-1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    coil_config *c = coil_config_new();
    coil_diag d = {{0}};
    cr_assert_eq(coil_config_set(c, "verify", bad[i], &d), -1, "'%s' accepted", bad[i]);
    cr_assert(strstr(d.msg, "verify must be a bool"), "%s", d.msg);
    coil_config_free(c);
  }
}

Test(config, tilde_expansion)
{
  coil_config *c = load("[coil]\n"
                        "cache_dir = ~/cache\n"
                        "plugin_path = ~/a:/opt/b:~:rel/c\n"
                        "debug_dump = ~\n");
  expect(c, "cache_dir", "/home/tester/cache", "t.ini:2");
  expect(c, "plugin_path", "/home/tester/a:/opt/b:/home/tester:rel/c", "t.ini:3");
  expect(c, "debug_dump", "/home/tester", "t.ini:4");
  coil_config_free(c);

  /* only a leading '~' expands; one inside a path is a plain character */
  c = load("[coil]\ncache_dir = /srv/~/x\nbackend = cpu\n");
  expect(c, "cache_dir", "/srv/~/x", "t.ini:2");
  coil_config_free(c);

  /* the environment and the command line expand too; empty turns the cache off */
  setenv("COIL_PLUGIN_PATH", "~/plugins", 1);
  c = coil_config_new();
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  expect(c, "plugin_path", "/home/tester/plugins", "environment COIL_PLUGIN_PATH");
  cr_assert_eq(coil_config_set(c, "cache_dir", "~/x", &d), 0, "%s", d.msg);
  expect(c, "cache_dir", "/home/tester/x", "command line");
  cr_assert_eq(coil_config_set(c, "cache_dir", "", &d), 0, "%s", d.msg);
  expect(c, "cache_dir", "", "command line");
  coil_config_free(c);
}

Test(config, tilde_without_home)
{
  unsetenv("HOME");
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  setenv("COIL_CACHE_DIR", "~/cache", 1);
  cr_assert_eq(coil_config_apply_env(c, &d), -1);
  cr_assert_str_eq(d.msg, "environment: error: COIL_CACHE_DIR=~/cache: cache_dir: cannot expand "
                          "'~' in '~/cache': HOME is not set");
  coil_config_free(c);
}

Test(config, environment_errors_apply_nothing)
{
  setenv("COIL_BACKEND", "envbk", 1);
  setenv("COIL_MODE", "fast", 1);
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_apply_env(c, &d), -1);
  cr_assert_str_eq(d.msg, "environment: error: COIL_MODE=fast: mode must be one of default, "
                          "reduce-overhead, max-autotune; got 'fast'");
  expect(c, "backend", "cpu", "default"); /* COIL_BACKEND was fine, but not applied */
  coil_config_free(c);
}

Test(config, command_line_errors)
{
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_set(c, "mdoe", "default", &d), -1);
  cr_assert_str_eq(d.msg, "command line: error: unknown option 'mdoe' (known: backend, "
                          "mode, plugin_path, cache_dir, debug_dump, verify, graph_capture, "
                          "autotune, convolution, attention, matmul, decompose_k, cache.remote, "
                          "cache.remote_key_file, cache.remote_timeout_ms, cache.remote_max_entry, "
                          "cache.remote_prefix, cache.remote_ttl, cache.remote_publish); did you mean 'mode'?");
  memset(&d, 0, sizeof d);
  cr_assert_eq(coil_config_set(c, "backend", "../evil", &d), -1);
  cr_assert_str_eq(d.msg, "command line: error: backend must be a plugin name (letters, digits, "
                          "'_' and '-') or a comma-separated list of them, got '../evil'");
  memset(&d, 0, sizeof d);
  { /* a list of backends (partial offload), kept without the spaces */
    coil_config *l = coil_config_new();
    cr_assert_eq(coil_config_set(l, "backend", "template, cpu", &d), 0, "%s", d.msg);
    cr_assert_str_eq(coil_config_get(l, "backend"), "template,cpu");
    cr_assert_eq(coil_config_set(l, "backend", "template,,cpu", &d), -1);
    cr_assert(strstr(d.msg, "or a comma-separated list of them, got 'template,,cpu'"), "%s", d.msg);
    memset(&d, 0, sizeof d);
    cr_assert_eq(coil_config_set(l, "backend", "cpu,", &d), -1);
    memset(&d, 0, sizeof d);
    coil_config_free(l);
  }
  cr_assert_eq(coil_config_set(c, "debug_dump", "a\tb", &d), -1);
  cr_assert_str_eq(d.msg, "command line: error: debug_dump: the value has a control character "
                          "(byte 0x09)");
  memset(&d, 0, sizeof d);
  cr_assert_eq(coil_config_set(c, "convolution", "cudnn", &d), -1);
  cr_assert_str_eq(d.msg, "command line: error: convolution must be one of auto, generated, "
                          "library; got 'cudnn'");
  expect(c, "backend", "cpu", "default");
  expect(c, "debug_dump", "", "default");
  expect(c, "convolution", "auto", "default");
  cr_assert_eq(coil_config_set(c, "convolution", "library", &d), 0, "%s", d.msg);
  expect(c, "convolution", "library", "command line");
  coil_config_free(c);
}

/* ---------------------------------------------------------------- plugin sections ---- */

Test(config, plugin_sections)
{
  coil_config *c = load("[plugin.cuda]\n"
                        "library = libcoil_cuda.so\n"
                        "arch = sm_90\n"
                        "[coil]\n"
                        "backend = cuda\n"
                        "[plugin.hip-rocm_6]\n"
                        "gfx = gfx942\n"
                        "\n"
                        "[plugin.cuda]\n"
                        "nvrtc.flags = -lineinfo ; an inline comment\n");
  cr_assert_eq(coil_config_plugin_count(c), 2);
  cr_assert_str_eq(coil_config_plugin_name(c, 0), "cuda");
  cr_assert_str_eq(coil_config_plugin_name(c, 1), "hip-rocm_6");
  const char *const *k, *const *v, *const *o;
  cr_assert_eq(coil_config_plugin_options(c, "cuda", &k, &v, &o), 3);
  static const char *const want[][3] = {{"library", "libcoil_cuda.so", "t.ini:2"},
                                        {"arch", "sm_90", "t.ini:3"},
                                        {"nvrtc.flags", "-lineinfo", "t.ini:10"}};
  for (int i = 0; i < 3; i++) {
    cr_assert_str_eq(k[i], want[i][0]);
    cr_assert_str_eq(v[i], want[i][1]);
    cr_assert_str_eq(o[i], want[i][2]);
  }
  cr_assert_eq(coil_config_plugin_options(c, "hip-rocm_6", &k, &v, NULL), 1);
  cr_assert_str_eq(k[0], "gfx");
  cr_assert_str_eq(v[0], "gfx942");
  /* no such section: 0, and the arrays are NULL */
  cr_assert_eq(coil_config_plugin_options(c, "tpu", &k, &v, &o), 0);
  cr_assert_null(k);
  cr_assert_null(v);
  cr_assert_null(o);
  expect(c, "backend", "cuda", "t.ini:5");
  coil_config_free(c);
}

Test(config, second_file_overrides_plugin_keys_in_place)
{
  coil_config *c = load("[plugin.cuda]\nlibrary = a.so\narch = sm_80\n");
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_load_string(c, "site.ini", "[plugin.cuda]\narch = sm_90\nextra = 1\n",
                                        &d),
               0, "%s", d.msg);
  const char *const *k, *const *v, *const *o;
  cr_assert_eq(coil_config_plugin_options(c, "cuda", &k, &v, &o), 3);
  cr_assert_str_eq(k[1], "arch");
  cr_assert_str_eq(v[1], "sm_90");
  cr_assert_str_eq(o[1], "site.ini:2");
  cr_assert_str_eq(k[2], "extra");
  cr_assert_str_eq(o[0], "t.ini:2");
  coil_config_free(c);
}

/* ---------------------------------------------------------------- the ini reader ---- */

Test(config, comments_blank_lines_crlf_and_bom)
{
  coil_config *c = load("\xEF\xBB\xBF; a comment\r\n"
                        "# another\r\n"
                        "\r\n"
                        "[coil]   ; a comment after the header\r\n"
                        "   mode = reduce-overhead\r\n" /* indented, but the first key */
                        "backend: hip ; configparser's ':' works too\r\n"
                        "cache_dir = /x;y\r\n"); /* ';' without a space before is text */
  expect(c, "mode", "reduce-overhead", "t.ini:5");
  expect(c, "backend", "hip", "t.ini:6");
  expect(c, "cache_dir", "/x;y", "t.ini:7");
  coil_config_free(c);
}

Test(config, empty_file_and_empty_sections)
{
  coil_config *c = load("");
  expect(c, "backend", "cpu", "default");
  coil_config_free(c);
  c = load("[coil]\n[plugin.cuda]\n");
  expect(c, "backend", "cpu", "default");
  cr_assert_eq(coil_config_plugin_count(c), 0); /* a section with no keys leaves no trace */
  coil_config_free(c);
}

Test(config, line_length_limit)
{
  /* inih's buffer takes 197 characters: one more would be cut off silently, so it is an error */
  char text[512], value[300];
  int prefix = (int)strlen("debug_dump = ");
  memset(value, 'x', sizeof value);
  snprintf(text, sizeof text, "[coil]\ndebug_dump = %.*s\n", 197 - prefix, value);
  coil_config *c = load(text);
  cr_assert_eq(strlen(coil_config_get(c, "debug_dump")), (size_t)(197 - prefix));
  coil_config_free(c);
  snprintf(text, sizeof text, "[coil]\ndebug_dump = %.*s\n", 198 - prefix, value);
  rejects(text, "t.ini:2: error: the line is 198 characters long; coil's ini reader (inih) "
                "takes at most 197");
  /* the limit counts characters, not the "\r\n" */
  snprintf(text, sizeof text, "[coil]\r\ndebug_dump = %.*s\r\n", 197 - prefix, value);
  c = load(text);
  cr_assert_eq(strlen(coil_config_get(c, "debug_dump")), (size_t)(197 - prefix));
  coil_config_free(c);
}

Test(config, rejections_change_nothing)
{
  /* good keys before the bad one are not applied */
  rejects("[coil]\nbackend = cuda\nmode = max-autotune\n[plugin.cuda]\narch = sm_90\n"
          "[coil]\nverify = perhaps\n",
          "t.ini:7: error: verify must be a bool (true/false, yes/no, on/off, 1/0), got "
          "'perhaps'");
  rejects("[coil]\nbackend = cuda\n[plugin.cuda]\narch = sm_90\nnot a key\n",
          "t.ini:5: error: expected 'key = value', '[section]' or a ';' comment, got 'not a "
          "key'");
}

Test(config, errors_inih_would_let_through)
{
  rejects("[coil]\nmode = default\n\tbackend = cuda\n",
          "t.ini:3: error: indented line: inih would append it to the value above; coil takes "
          "one line per value, so remove the indentation");
  rejects("[coil]]\n", "t.ini:1: error: unexpected text ']' after the section header [coil]");
  rejects("[plugin.cuda]\narch = sm\x01" "90\n",
          "t.ini:2: error: the value of 'arch' in [plugin.cuda] has a control character");
}

Test(config, nul_byte)
{
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  char path[] = "/tmp/coil_config_nul_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  static const char text[] = "[coil]\nmode = default\nbackend = c\0pu\n";
  cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
  close(fd);
  cr_assert_eq(coil_config_load_file(c, path, &d), -1);
  char want[128];
  snprintf(want, sizeof want, "%s:3: error: the line has a NUL byte; an ini file is text", path);
  cr_assert_str_eq(d.msg, want);
  unlink(path);
  expect(c, "mode", "default", "default");
  coil_config_free(c);
}

Test(config, unreadable_files)
{
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_load_file(c, "/nonexistent/coil.ini", &d), -1);
  cr_assert_str_eq(d.msg, "/nonexistent/coil.ini: error: cannot open: No such file or directory");
  memset(&d, 0, sizeof d);
  cr_assert_eq(coil_config_load_file(c, "/tmp", &d), -1);
  cr_assert_str_eq(d.msg, "/tmp: error: cannot read: Is a directory");
  coil_config_free(c);
}

/* ---------------------------------------------------------------- choosing the file ---- */

Test(config, file_default)
{
  char dir[] = "/tmp/coil_config_cwd_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  cr_assert_eq(chdir(dir), 0);
  cr_assert_null(coil_config_file_default(NULL)); /* nothing anywhere */
  FILE *f = fopen("coil.ini", "w");
  cr_assert_not_null(f);
  fclose(f);
  cr_assert_str_eq(coil_config_file_default(NULL), "coil.ini");
  setenv("COIL_CONFIG", "/etc/coil.ini", 1);
  cr_assert_str_eq(coil_config_file_default(NULL), "/etc/coil.ini");
  cr_assert_str_eq(coil_config_file_default("mine.ini"), "mine.ini");
  setenv("COIL_CONFIG", "", 1); /* empty is unset */
  cr_assert_str_eq(coil_config_file_default(NULL), "coil.ini");
  cr_assert_eq(unlink("coil.ini"), 0);
  cr_assert_eq(rmdir(dir), 0);
}

/* ---------------------------------------------------------------- explain ---- */

Test(config, explain_text)
{
  setenv("COIL_BACKEND", "cuda", 1);
  coil_config *c = load("[coil]\ngraph_capture = false\n[plugin.cuda]\narch = sm_90\n"
                        "library = libcoil_cuda.so\n");
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_config_set(c, "mode", "max-autotune", &d), 0, "%s", d.msg);
  coil_strbuf out = {0};
  coil_config_explain(c, &out);
  cr_assert_str_eq(
      out.s,
      "; every option of coil, its value, and where the value comes from\n"
      "; (lowest first: default < mode preset < ini file < environment COIL_<KEY> < command "
      "line)\n"
      "; ini file: t.ini\n"
      "\n"
      "[coil]\n"
      "backend       = cuda                     ; environment COIL_BACKEND\n"
      "mode          = max-autotune             ; command line\n"
      "plugin_path   =                          ; default\n"
      "cache_dir     = /home/tester/.cache/coil ; default\n"
      "debug_dump    =                          ; default\n"
      "verify        = true                     ; default\n"
      "graph_capture = false                    ; t.ini:2\n"
      "autotune      = true                     ; mode preset 'max-autotune'\n"
      "convolution   = auto                     ; default\n"
      "attention     = auto                     ; default\n"
      "matmul        = auto                     ; default\n"
      "decompose_k   = auto                     ; default\n"
      "\n"
      "[cache]\n"
      "remote            =          ; default\n"
      "remote_key_file   =          ; default\n"
      "remote_timeout_ms = 250      ; default\n"
      "remote_max_entry  = 67108864 ; default\n"
      "remote_prefix     = coil     ; default\n"
      "remote_ttl        = 0        ; default\n"
      "remote_publish    = true     ; default\n"
      "\n"
      "[plugin.cuda]\n"
      "arch    = sm_90           ; t.ini:4\n"
      "library = libcoil_cuda.so ; t.ini:5\n"
      "\n"
      "; what each mode turns on (a preset sits below the ini file, which can turn it off "
      "again):\n"
      "; mode=default sets nothing: every option keeps its default\n"
      ";   the baseline: quick compiles, and each call runs the generated wrapper as it is\n"
      "; mode=reduce-overhead sets: graph_capture = true\n"
      ";   for small inputs, where host time per call dominates: the wrapper's kernel launches "
      "are\n"
      ";   recorded once and replayed (CUDA graphs)\n"
      "; mode=max-autotune sets: autotune = true, graph_capture = true\n"
      ";   for the fastest kernels, at the cost of compile time: candidate kernel "
      "configurations are\n"
      ";   benchmarked and the fastest kept; launches are replayed as in reduce-overhead\n");
  coil_strbuf_free(&out);
  coil_config_free(c);
}

Test(config, explain_loads_back)
{
  setenv("COIL_PLUGIN_PATH", "/opt/a:~/b", 1);
  coil_config *c = load("[coil]\nmode = reduce-overhead\ndebug_dump = /tmp/dump\n"
                        "[plugin.x]\nk = v w\n");
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_apply_env(c, &d), 0, "%s", d.msg);
  coil_strbuf out = {0};
  coil_config_explain(c, &out);
  coil_config *back = coil_config_new();
  cr_assert_eq(coil_config_load_string(back, "explain.ini", out.s, &d), 0, "%s\n%s", d.msg, out.s);
  static const char *const keys[] = {"backend",    "mode",   "plugin_path",   "cache_dir",
                                     "debug_dump", "verify", "graph_capture", "autotune"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    cr_assert_str_eq(coil_config_get(back, keys[i]), coil_config_get(c, keys[i]), "%s", keys[i]);
  const char *const *k, *const *v;
  cr_assert_eq(coil_config_plugin_options(back, "x", &k, &v, NULL), 1);
  cr_assert_str_eq(v[0], "v w");
  coil_strbuf_free(&out);
  coil_config_free(back);
  coil_config_free(c);
}

/* ---------------------------------------------------------------- examples/coil.ini ---- */

Test(config, example_file_loads)
{
  const char *path = COIL_SOURCE_DIR "/examples/coil.ini";
  coil_config *c = coil_config_new();
  coil_diag d = {{0}};
  cr_assert_eq(coil_config_load_file(c, path, &d), 0, "%s", d.msg);
  cr_assert_str_eq(coil_config_get(c, "backend"), "cpu");
  cr_assert_str_eq(coil_config_get(c, "mode"), "default");
  cr_assert_str_eq(coil_config_get(c, "cache_dir"), "/home/tester/.cache/coil");
  cr_assert(strncmp(coil_config_origin(c, "backend"), path, strlen(path)) == 0);
  /* every [coil] key but the two the modes set is written out in the example */
  static const char *const keys[] = {"backend", "mode", "plugin_path", "cache_dir", "debug_dump",
                                     "verify"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    cr_assert_str_neq(coil_config_origin(c, keys[i]), "default", "%s", keys[i]);
  const char *const *k, *const *v;
  cr_assert_eq(coil_config_plugin_options(c, "cuda", &k, &v, NULL), 2);
  cr_assert_str_eq(k[0], "library");
  cr_assert_str_eq(v[1], "sm_90");
  coil_config_free(c);
}

/* ---------------------------------------------------------------- the malformed corpus ---- */

#define BAD COIL_SOURCE_DIR "/core/tests/bad/ini"

static bool
ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Every NAME.ini in core/tests/bad/ini fails to load, its message (one line, naming the file
 * and a line) contains what its first line "; expect: ..." says, and the configuration keeps
 * its defaults. */
Test(config, bad_corpus)
{
  DIR *dp = opendir(BAD);
  cr_assert_not_null(dp, "%s: %s", BAD, strerror(errno));
  int cases = 0;
  for (struct dirent *de; (de = readdir(dp));) {
    if (!ends_with(de->d_name, ".ini"))
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", BAD, de->d_name);
    char *text = slurp(path);
    const char *tag = "; expect: ";
    cr_assert(strncmp(text, tag, strlen(tag)) == 0, "%s does not start with '%s'", de->d_name,
              tag);
    char *want = text + strlen(tag);
    want[strcspn(want, "\n")] = '\0';
    char where[300];
    snprintf(where, sizeof where, "%s:", de->d_name);
    cr_assert(strncmp(want, where, strlen(where)) == 0,
              "%s: the expectation must start with the file name and line", de->d_name);

    coil_config *c = coil_config_new();
    coil_diag d = {{0}};
    cr_assert_eq(coil_config_load_file(c, path, &d), -1, "%s was accepted", de->d_name);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/%s", BAD, want);
    cr_assert(strstr(d.msg, prefix) == d.msg, "%s: expected '%s' in: %s", de->d_name, want,
              d.msg);
    int line = 0;
    cr_assert_eq(sscanf(d.msg + strlen(path), ":%d: error: ", &line), 1, "no line: %s", d.msg);
    cr_assert_gt(line, 1, "%s: the error is on the expectation line", de->d_name);
    for (const char *p = d.msg; *p; p++)
      cr_assert((unsigned char)*p >= 0x20, "%s: control byte in message: %s", de->d_name, d.msg);
    cr_assert_str_eq(coil_config_origin(c, "backend"), "default");
    cr_assert_eq(coil_config_plugin_count(c), 0);
    coil_config_free(c);
    free(text);
    cases++;
  }
  closedir(dp);
  cr_assert_geq(cases, 25, "only %d corpus files in %s", cases, BAD);
}
