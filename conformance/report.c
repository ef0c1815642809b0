/* report.c — the suite's reports: a console table (op × dtype for the op tier, a line per case
 * for the others, then every failure with its reason), JUnit XML for CI systems, and CSV, the
 * input of tools/support-matrix.sh. */
#include <stdio.h>
#include <string.h>

#include "conf.h"

static const char *const dtypes[] = {"f32", "f16", "bf16", "i64", "bool"};

static void
counts(const conf_ctx *c, const char *tier, int n[4])
{
  memset(n, 0, 4 * sizeof *n);
  for (int i = 0; i < c->nresults; i++)
    if (!tier || strcmp(c->results[i].tier, tier) == 0)
      n[c->results[i].status]++;
}

static bool
in_list(const char *const *list, int n, const char *s)
{
  for (int i = 0; i < n; i++)
    if (strcmp(list[i], s) == 0)
      return true;
  return false;
}

static void
op_table(const conf_ctx *c, FILE *f)
{
  const char *ops[512];
  int nops = 0;
  for (int i = 0; i < c->nresults && nops < 512; i++)
    if (strcmp(c->results[i].tier, "op") == 0 && !in_list(ops, nops, c->results[i].name))
      ops[nops++] = c->results[i].name;
  if (!nops)
    return;
  fprintf(f, "\n%-50s", "op");
  for (int d = 0; d < 5; d++)
    fprintf(f, " %-8s", dtypes[d]);
  fprintf(f, " worst NMSE\n");
  for (int o = 0; o < nops; o++) {
    fprintf(f, "%-50s", ops[o]);
    double worst = -1;
    for (int d = 0; d < 5; d++) {
      int n[4] = {0};
      for (int i = 0; i < c->nresults; i++) {
        const conf_result *r = &c->results[i];
        if (strcmp(r->tier, "op") || strcmp(r->name, ops[o]) || strcmp(r->dtype, dtypes[d]))
          continue;
        n[r->status]++;
        if (r->nmse > worst)
          worst = r->nmse;
      }
      const char *cell = n[CONF_FAIL] ? "FAIL" : n[CONF_PASS] ? "pass" : n[CONF_UNSUPPORTED] ? "n/s" : n[CONF_SKIP] ? "skip" : "-";
      fprintf(f, " %-8s", cell);
    }
    if (worst >= 0)
      fprintf(f, " %.2g\n", worst);
    else
      fprintf(f, " -\n");
  }
}

void
conf_report_console(const conf_ctx *c, FILE *f)
{
  static const char *const tiers[] = {"op", "model", "abi", "emit"};
  for (int t = 0; t < 4; t++) {
    int n[4];
    counts(c, tiers[t], n);
    if (!n[0] && !n[1] && !n[2] && !n[3])
      continue;
    fprintf(f, "\n%s tier: %d pass, %d FAIL, %d not supported, %d skipped\n", tiers[t], n[CONF_PASS], n[CONF_FAIL],
            n[CONF_UNSUPPORTED], n[CONF_SKIP]);
    if (t == 0) {
      op_table(c, f);
      continue;
    }
    for (int i = 0; i < c->nresults; i++) {
      const conf_result *r = &c->results[i];
      if (strcmp(r->tier, tiers[t]) != 0)
        continue;
      fprintf(f, "  %-28s %-7s %-14s", r->name, strcmp(r->shape, "-") ? r->shape : "", conf_status_name(r->status));
      if (r->nmse >= 0)
        fprintf(f, " NMSE %.2g", r->nmse);
      if (r->msg[0] && r->status != CONF_FAIL)
        fprintf(f, "  %s", r->msg);
      fprintf(f, "\n");
    }
  }
  int n[4];
  counts(c, NULL, n);
  if (n[CONF_FAIL]) {
    fprintf(f, "\nfailures:\n");
    for (int i = 0; i < c->nresults; i++)
      if (c->results[i].status == CONF_FAIL) {
        char id[256];
        conf_case_id(&c->results[i], id, sizeof id);
        fprintf(f, "  %s: %s\n", id, c->results[i].msg);
        conf_print_err(f, c->errs[i]); /* what the case wrote to stderr, under it */
      }
  }
  fprintf(f, "\n%s: %d cases: %d pass, %d FAIL, %d not supported, %d skipped\n", n[CONF_FAIL] ? "FAILED" : "passed",
          c->nresults, n[CONF_PASS], n[CONF_FAIL], n[CONF_UNSUPPORTED], n[CONF_SKIP]);
}

/* s as XML text; newlines kept only in element text (lines), dropped from attributes. */
static void xml_text(FILE *f, const char *s, bool lines);
static void
xml_escape(FILE *f, const char *s)
{
  xml_text(f, s, false);
}

static void
xml_text(FILE *f, const char *s, bool lines)
{
  for (; *s; s++)
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\t' || (lines && *s == '\n'))
        fputc(*s, f);
    }
}

int
conf_report_junit(const conf_ctx *c, const char *path)
{
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  static const char *const tiers[] = {"op", "model", "abi", "emit"};
  int all[4];
  counts(c, NULL, all);
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"coil-conformance\" tests=\"%d\" "
             "failures=\"%d\" skipped=\"%d\">\n", c->nresults, all[CONF_FAIL], all[CONF_UNSUPPORTED] + all[CONF_SKIP]);
  for (int t = 0; t < 4; t++) {
    int n[4];
    counts(c, tiers[t], n);
    int total = n[0] + n[1] + n[2] + n[3];
    if (!total)
      continue;
    fprintf(f, "  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n", tiers[t], total, n[CONF_FAIL],
            n[CONF_UNSUPPORTED] + n[CONF_SKIP]);
    for (int i = 0; i < c->nresults; i++) {
      const conf_result *r = &c->results[i];
      if (strcmp(r->tier, tiers[t]) != 0)
        continue;
      fprintf(f, "    <testcase classname=\"%s.", r->tier);
      xml_escape(f, r->name);
      fprintf(f, "\" name=\"%s/%s\" time=\"%.3f\"", r->dtype, r->shape, r->seconds);
      if (r->status == CONF_PASS) {
        fprintf(f, "/>\n");
        continue;
      }
      fprintf(f, ">\n      <%s message=\"%s", r->status == CONF_FAIL ? "failure" : "skipped",
              r->status == CONF_UNSUPPORTED ? "not supported: " : "");
      xml_escape(f, r->msg);
      fprintf(f, "\"/>\n");
      if (c->errs[i]) {
        fprintf(f, "      <system-err>");
        xml_text(f, c->errs[i], true);
        fprintf(f, "</system-err>\n");
      }
      fprintf(f, "    </testcase>\n");
    }
    fprintf(f, "  </testsuite>\n");
  }
  fprintf(f, "</testsuites>\n");
  return fclose(f);
}

int
conf_report_csv(const conf_ctx *c, const char *path)
{
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  static const char *const st[] = {"pass", "fail", "unsupported", "skipped"};
  fprintf(f, "tier,name,dtype,shape,status,nmse,seconds,message\n");
  for (int i = 0; i < c->nresults; i++) {
    const conf_result *r = &c->results[i];
    fprintf(f, "%s,%s,%s,%s,%s,", r->tier, r->name, r->dtype, r->shape, st[r->status]);
    if (r->nmse >= 0)
      fprintf(f, "%.3g", r->nmse);
    fprintf(f, ",%.3f,\"", r->seconds);
    for (const char *s = r->msg; *s; s++) {
      if (*s == '"')
        fputc('"', f);
      if (*s != '\n')
        fputc(*s, f);
    }
    fprintf(f, "\"\n");
  }
  return fclose(f);
}
