/* config.h — coil's configuration (core-internal): the [coil] options and the [plugin.NAME]
 * sections of an ini file (docs/config.md), layered with the environment and the command line.
 *
 * Every option has one effective value, taken from the highest layer that sets it, lowest first:
 *
 *   built-in default < mode preset < ini file < environment COIL_<KEY> < command line
 *
 * The mode preset is the table of options the effective `mode` turns on (max-autotune sets
 * autotune and graph_capture, ...). The mode is resolved first, from the other layers, and its
 * preset then sits just above the defaults, so an ini file can still turn off what a mode turns
 * on. Each layer is kept apart, so the order of the calls below does not matter: loading the
 * file after applying the environment gives the same result.
 *
 * Every effective value remembers its origin, as text: "default", "mode preset 'max-autotune'",
 * "FILE:LINE", "environment COIL_MODE" or "command line". Values are checked when they are set;
 * bools are stored as "true" or "false", and paths have a leading '~' replaced by $HOME.
 *
 * [plugin.NAME] sections are kept as ordered key/value lists for the plugin to check: coil only
 * checks that the names are well formed and that no key repeats within a file.
 *
 * A coil_config holds no global state and reads the environment only in coil_config_new (HOME)
 * and coil_config_apply_env. Every fallible function returns 0 on success and -1 with a message
 * in *d on error; on error the configuration is left as it was. */
#ifndef COIL_CONFIG_H
#define COIL_CONFIG_H

#include <stdbool.h>

#include "coil/base.h"
#include "coil/strbuf.h"

typedef struct coil_config coil_config;

/* A configuration holding only the built-in defaults (cache_dir's '~' expanded from $HOME now). */
coil_config *coil_config_new(void);
void coil_config_free(coil_config *c);

/* The ini-file layer: reads PATH (or TEXT, named NAME in messages and origins) with inih.
 * Rejected with "FILE:LINE: error: ...": malformed lines, unknown sections and [coil] keys,
 * bad values, a key repeated within one section, lines longer than inih's limit (197
 * characters), indented continuation lines. Loading a second file overrides, key by key, what
 * the first set. */
int coil_config_load_file(coil_config *c, const char *path, coil_diag *d);
int coil_config_load_string(coil_config *c, const char *name, const char *text, coil_diag *d);

/* The environment layer: COIL_<KEY> (COIL_BACKEND, COIL_MODE, ...) for every [coil] key, read
 * with getenv. An empty variable counts as unset; calling it again replaces the layer with the
 * environment of then. Errors read
 * "environment: error: COIL_MODE=fast: ...", and then no variable is applied. */
int coil_config_apply_env(coil_config *c, coil_diag *d);

/* The command-line layer: sets [coil] KEY to VALUE (origin "command line"). Errors read
 * "command line: error: ...". */
int coil_config_set(coil_config *c, const char *key, const char *value, coil_diag *d);

/* The effective value and origin of a [coil] key; NULL for a key coil does not know. The
 * strings live as long as c, until the next call that changes c. */
const char *coil_config_get(const coil_config *c, const char *key);
const char *coil_config_origin(const coil_config *c, const char *key);
bool coil_config_get_bool(const coil_config *c, const char *key); /* false unless "true" */

/* The general options every plugin is handed beside its section's, as "coil.KEY" (see
 * coil_plugin_options): mode, graph_capture and autotune with their resolved values. Fills keys
 * and values (static / the config's strings) and returns how many (COIL_CONFIG_GENERAL). */
#define COIL_CONFIG_GENERAL 3
int coil_config_general_options(const coil_config *c, const char **keys, const char **values);

/* [plugin.NAME] sections, in the order they first appeared. */
int coil_config_plugin_count(const coil_config *c);
const char *coil_config_plugin_name(const coil_config *c, int i);
/* The options of [plugin.PLUGIN] in file order: sets *keys, *values and *origins ("FILE:LINE",
 * for the plugin's own messages; any of the three may be NULL) to arrays of the returned count.
 * 0 when there is no such section. */
int coil_config_plugin_options(const coil_config *c, const char *plugin, const char *const **keys,
                               const char *const **values, const char *const **origins);

/* Every effective [coil] option with its value and origin, one per line and aligned, then the
 * plugin sections, then what each mode turns on. The text is itself an ini file (the origins
 * and notes are comments), which loads back to the same values while its lines fit inih's
 * limit. */
void coil_config_explain(const coil_config *c, coil_strbuf *out);

/* Which ini file a tool should load: FLAG (a --config value) when not NULL, else $COIL_CONFIG
 * when set and not empty, else "coil.ini" when the current directory has one, else NULL. */
const char *coil_config_file_default(const char *flag);

#endif
