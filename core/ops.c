/* ops.c — the op table built from ops.def, name lookup, and the ATen schema parser.
 *
 * Schemas are written as in native_functions.yaml so they can be checked against PyTorch by
 * eye; they are parsed on demand (a few microseconds) into a caller-owned coil_schema. */
#include "ops.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const coil_op table[] = {
#define OP(id, name, kind, schema, rule, sub) \
  {COIL_OP_##id, name, COIL_OPK_##kind, schema, COIL_RULE_##rule, sub},
#include "ops.def"
#undef OP
};

const coil_op *
coil_op_get(coil_op_id id)
{
  return (unsigned)id < COIL_OP_COUNT ? &table[id] : NULL;
}

const coil_op *
coil_op_lookup(const char *name)
{
  for (int i = 0; i < COIL_OP_COUNT; i++)
    if (strcmp(table[i].name, name) == 0)
      return &table[i];
  return NULL;
}

const char *
coil_op_kind_name(coil_op_kind k)
{
  static const char *names[] = {"pointwise", "reduction", "view", "move", "extern",
                                "composite", "creation", "noop"};
  return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

const char *
coil_rule_name(coil_rule r)
{
  static const char *names[] = {
#define R(x) #x,
      COIL_RULES(R)
#undef R
  };
  return (unsigned)r < COIL_RULE_COUNT ? names[r] : "?";
}

int
coil_schema_find(const coil_schema *s, const char *name)
{
  for (int i = 0; i < s->nparams; i++)
    if (strcmp(s->params[i].name, name) == 0)
      return i;
  return -1;
}

typedef struct {
  const char *p;
  const coil_op *op;
  coil_diag *d;
} sparser;

static int
serr(sparser *sp, const char *what)
{
  return coil_diag_set(sp->d, "op table: schema of %s: %s at \"%.20s\"", sp->op->name, what, sp->p);
}

static void
skipws(sparser *sp)
{
  while (*sp->p == ' ')
    sp->p++;
}

static bool
word(sparser *sp, char *buf, size_t cap)
{
  skipws(sp);
  size_t n = 0;
  while (isalnum((unsigned char)sp->p[n]) || sp->p[n] == '_')
    n++;
  if (n == 0 || n >= cap)
    return false;
  memcpy(buf, sp->p, n);
  buf[n] = 0;
  sp->p += n;
  return true;
}

/* default := "None" | "True" | "False" | INT | FLOAT | "'" chars "'" | "[" [INT {"," INT}] "]" */
static int
parse_default(sparser *sp, coil_param *prm)
{
  skipws(sp);
  coil_lit *l = &prm->def;
  if (*sp->p == '[') {
    sp->p++;
    l->kind = COIL_LIT_LIST;
    l->items = prm->def_items; /* fixed up by the caller: the param is copied */
    while (skipws(sp), *sp->p != ']') {
      if (l->n == COIL_MAX_RANK)
        return serr(sp, "default list too long");
      char *end;
      long long v = strtoll(sp->p, &end, 10);
      if (end == sp->p)
        return serr(sp, "expected an integer in a default list");
      prm->def_items[l->n].kind = COIL_LIT_INT;
      prm->def_items[l->n++].i = v;
      sp->p = end;
      skipws(sp);
      if (*sp->p == ',')
        sp->p++;
    }
    sp->p++;
    return 0;
  }
  if (*sp->p == '\'') {
    const char *q = strchr(sp->p + 1, '\'');
    if (!q)
      return serr(sp, "unterminated string default");
    /* defaults point into the static schema text; only their first n bytes are meaningful */
    l->kind = COIL_LIT_STR;
    l->s = sp->p + 1;
    l->n = (int)(q - sp->p - 1);
    sp->p = q + 1;
    return 0;
  }
  char w[32];
  const char *start = sp->p;
  if (word(sp, w, sizeof w)) {
    if (strcmp(w, "None") == 0) { l->kind = COIL_LIT_NONE; return 0; }
    if (strcmp(w, "True") == 0) { l->kind = COIL_LIT_BOOL; l->i = 1; return 0; }
    if (strcmp(w, "False") == 0) { l->kind = COIL_LIT_BOOL; l->i = 0; return 0; }
    sp->p = start;
  }
  char *end;
  long long iv = strtoll(sp->p, &end, 10);
  if (end != sp->p && *end != '.' && *end != 'e') {
    l->kind = COIL_LIT_INT;
    l->i = iv;
    sp->p = end;
    return 0;
  }
  double fv = strtod(sp->p, &end);
  if (end == sp->p)
    return serr(sp, "unrecognised default");
  l->kind = COIL_LIT_FLOAT;
  l->f = fv;
  sp->p = end;
  return 0;
}

static const struct {
  const char *name;
  coil_ptype type;
} base_types[] = {
    {"Tensor", COIL_P_TENSOR}, {"Scalar", COIL_P_SCALAR}, {"int", COIL_P_INT},
    {"SymInt", COIL_P_INT},    {"float", COIL_P_FLOAT},   {"bool", COIL_P_BOOL},
    {"str", COIL_P_STR},       {"ScalarType", COIL_P_DTYPE}, {"Layout", COIL_P_LAYOUT},
    {"Device", COIL_P_DEVICE}, {"MemoryFormat", COIL_P_MEMFMT}, {"Any", COIL_P_ANY},
};

bool
coil_op_is_inplace(const coil_op *op)
{
  return strncmp(op->schema, "Tensor(a!) ", 11) == 0;
}

/* param := "*" | base ["(" alias ")"] ["?"] ["[" [INT] "]"] ["?"] NAME ["=" default]
 * An alias annotation marks a parameter written in place (mutated): an in-place overload's
 * first (Tensor(a!) self, its value rebound); an .out overload's `out` (Tensor(a!) out) is
 * not written: graphs are functional, so such an op returns the new value instead. */
static int
parse_param(sparser *sp, coil_param *prm, bool kwonly)
{
  char w[32];
  if (!word(sp, w, sizeof w))
    return serr(sp, "expected a type");
  int bt = -1;
  for (size_t i = 0; i < sizeof base_types / sizeof *base_types; i++)
    if (strcmp(w, base_types[i].name) == 0)
      bt = (int)i;
  if (bt < 0)
    return serr(sp, "unknown type");
  prm->type = base_types[bt].type;
  if (*sp->p == '(') {
    const char *close = strchr(sp->p, ')');
    if (!close)
      return serr(sp, "unterminated alias annotation");
    prm->mutated = close[-1] == '!';
    sp->p = close + 1;
  }
  bool elem_optional = false;
  if (*sp->p == '?') {
    elem_optional = true;
    sp->p++;
  }
  if (*sp->p == '[') {
    sp->p++;
    prm->fixed_len = (int)strtol(sp->p, (char **)&sp->p, 10);
    if (*sp->p != ']')
      return serr(sp, "expected ']'");
    sp->p++;
    if (prm->type == COIL_P_TENSOR)
      prm->type = elem_optional ? COIL_P_OPT_TENSOR_LIST : COIL_P_TENSOR_LIST;
    else if (prm->type == COIL_P_INT || prm->type == COIL_P_BOOL)
      prm->type = COIL_P_INT_LIST;
    else if (prm->type == COIL_P_FLOAT)
      prm->type = COIL_P_FLOAT_LIST;
    else
      return serr(sp, "unsupported list type");
    elem_optional = false;
  }
  if (*sp->p == '?') {
    elem_optional = true;
    sp->p++;
  }
  prm->optional = elem_optional;
  prm->kwonly = kwonly;
  if (!word(sp, prm->name, sizeof prm->name))
    return serr(sp, "expected a parameter name");
  skipws(sp);
  if (*sp->p == '=') {
    sp->p++;
    prm->has_default = true;
    if (parse_default(sp, prm))
      return -1;
  }
  /* ATen: an optional keyword-only parameter without a default defaults to None */
  if (!prm->has_default && prm->optional && kwonly) {
    prm->has_default = true;
    prm->def.kind = COIL_LIT_NONE;
  }
  return 0;
}

int
coil_schema_parse(const coil_op *op, coil_schema *s, coil_diag *d)
{
  sparser sp = {op->schema, op, d};
  memset(s, 0, sizeof *s);
  bool kwonly = false;
  for (;;) {
    skipws(&sp);
    if (!*sp.p)
      break;
    if (*sp.p == '*') {
      kwonly = true;
      sp.p++;
    } else {
      if (s->nparams == COIL_MAX_PARAMS)
        return serr(&sp, "too many parameters");
      if (parse_param(&sp, &s->params[s->nparams], kwonly))
        return -1;
      s->nparams++;
    }
    skipws(&sp);
    if (*sp.p == ',')
      sp.p++;
    else if (*sp.p)
      return serr(&sp, "expected ','");
  }
  for (int i = 0; i < s->nparams; i++)
    if (s->params[i].def.kind == COIL_LIT_LIST)
      s->params[i].def.items = s->params[i].def_items;
  return 0;
}
