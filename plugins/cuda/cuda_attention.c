/* cuda_attention.c — coil.attention on the cuda plugin: the fused scaled dot-product attention the
 * core emits as one library call (docs/wrapper-ir.md),
 *   extern_call coil.attention(q, k, v[, mask]) -> (out) [scale=S, masked_rows='zero'|'nan']
 * run by the kernels of cuda_attention.cu (compiled by NVRTC with the program's kernels; no
 * cuBLAS). Each line gets the SIMT kernel of its dtype, which runs every instance, and, where
 * the program makes it possible (f16 or bf16, E = Ev in {32, 64, 128} known, unit last strides,
 * an sm_80 or later target), the tensor-core kernel, which a run takes when the operands'
 * addresses and row strides are 16-byte aligned and the scale positive, and otherwise leaves to
 * the SIMT one.
 *
 * Compile plans the kernels (cuda_attention_plan), writes their source to attention.cu, one
 * cubin per kernel (a<i>.cubin, compiled with the program's kernels) and the plan to
 * attention.txt; load reads the plan and the cubins back; a run binds the line's buffers into
 * the kernels' parameters (cuda_attention_prepare: broadcast batch dims become stride 0, batch
 * dims merged where every operand allows) and launches, capture-safe (no allocation, no sync).
 *
 * On sm_90 the tensor-core kernel of head dims 64 and 128 is attn_wg (wgmma, compiled for sm_90a:
 * its instructions are in no later arch), elsewhere attn_tc (mma.sync).
 *
 * Options ([plugin.cuda]): attention_kernel = auto|mma|simt (mma: never attn_wg; simt: never a
 * tensor-core kernel); attention_tile = BRxBCxWMxST[xMINB]: attn_tc's tile for every head dim
 * (query rows a block, keys a step, m16 tiles a warp, shared-memory stages, blocks an SM for the
 * register budget), for measuring, attn_tc then on sm_90 too; by default a tile per head dim
 * (tc_tiles below). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

extern const char cuda_attention_cu[]; /* cuda_attention.cu (embed.cmake) */

_Static_assert(sizeof(cuda_attn_params) == 8 * 60, "cuda_attn_params: cuda_attention.cu's coil_attn_params");

/* The default tile of the tensor-core kernel per head dim and mask: BR query rows (BR / (16 WM)
 * warps), BC keys a step, ST stages, MINB blocks an SM (__launch_bounds__: at most 65536 /
 * (MINB threads) registers); the first entry of a head dim and mask whose sm the target reaches
 * is taken. Registers (ptxas, sm_90), none spilled: hd 32: 102 (mask 120); hd 64: 254, two
 * blocks of 4 warps of 32 rows each an SM (WM 2: 0.123 ms against 0.134 with WM 1 and 8 warps
 * on the benchmark's 8x16x1024x64 f16, H100, 2026-11-27; mask: 128 with WM 1 and 32 keys a
 * step); hd 128: 194 (mask 198), one block of 8 warps. sm_80's ptxas needs a few more: there 32 keys a step, and the masks uncapped. */
static const cuda_attn_kernel tc_tiles[] = {
    /* wgmma on sm_90 (exactly: sm_90a's instructions), two blocks of two warpgroups an SM; the
     * standalone kernel's measured shapes (docs/benchmarks.md, "A wgmma kernel, standalone") */
    {.tc = true, .wg = true, .hd = 64, .br = 128, .bc = 128, .stages = 2, .minb = 2, .sm = 90},
    {.tc = true, .wg = true, .hd = 64, .mask = true, .br = 128, .bc = 128, .stages = 2, .minb = 2, .sm = 90},
    {.tc = true, .wg = true, .hd = 128, .br = 128, .bc = 64, .stages = 2, .minb = 2, .sm = 90},
    {.tc = true, .wg = true, .hd = 128, .mask = true, .br = 128, .bc = 64, .stages = 2, .minb = 2, .sm = 90},
    {.tc = true, .hd = 32, .br = 128, .bc = 64, .wm = 1, .stages = 2, .minb = 2},
    {.tc = true, .hd = 32, .mask = true, .br = 128, .bc = 64, .wm = 1, .stages = 2, .minb = 2, .sm = 90},
    {.tc = true, .hd = 32, .mask = true, .br = 128, .bc = 64, .wm = 1, .stages = 2, .minb = 1},
    {.tc = true, .hd = 64, .br = 128, .bc = 64, .wm = 2, .stages = 2, .minb = 2, .sm = 90},
    {.tc = true, .hd = 64, .br = 128, .bc = 32, .wm = 1, .stages = 3, .minb = 2},
    {.tc = true, .hd = 64, .mask = true, .br = 128, .bc = 32, .wm = 1, .stages = 3, .minb = 2, .sm = 90},
    {.tc = true, .hd = 64, .mask = true, .br = 128, .bc = 32, .wm = 1, .stages = 3, .minb = 1},
    {.tc = true, .hd = 128, .br = 128, .bc = 32, .wm = 1, .stages = 2, .minb = 1},
    {.tc = true, .hd = 128, .mask = true, .br = 128, .bc = 32, .wm = 1, .stages = 2, .minb = 1},
};

#define SIMT_ROWS 16    /* cuda_attention.cu's ATTN_SQ */
#define SIMT_COLS 64    /* ATTN_SV */
#define SIMT_THREADS 128
#define SMEM_DEFAULT 49152 /* dynamic shared memory without cuFuncSetAttribute */

static const char *
dtype_tag(coil_dtype t)
{
  switch (t) {
  case COIL_F16: return "f16";
  case COIL_BF16: return "bf16";
  case COIL_F32: return "f32";
  case COIL_F64: return "f64";
  default: return NULL;
  }
}

void
cuda_attention_kernel_name(const cuda_attn_kernel *k, char *buf, size_t n)
{
  if (!k->tc)
    snprintf(buf, n, "coil_attn_simt_%s", dtype_tag(k->dtype));
  else if (k->wg)
    snprintf(buf, n, "coil_attn_wg_%s_d%d%s_%dx%dx%d", dtype_tag(k->dtype), k->hd, k->mask ? "_mask" : "", k->br, k->bc,
             k->minb);
  else
    snprintf(buf, n, "coil_attn_tc_%s_d%d%s_%dx%dx%dx%dx%d", dtype_tag(k->dtype), k->hd, k->mask ? "_mask" : "", k->br,
             k->bc, k->wm, k->stages, k->minb);
}

const char *
cuda_attention_arch(const cuda_attn_kernel *k, const char *arch)
{
  return k->wg ? "sm_90a" : arch;
}

unsigned
cuda_attention_threads(const cuda_attn_kernel *k)
{
  return k->wg ? (unsigned)(2 * k->br) : k->tc ? (unsigned)(k->br / (16 * k->wm) * 32) : SIMT_THREADS;
}

/* attn_wg: Q, two stages of K and V, and 1024 bytes to align the swizzled tiles */
unsigned
cuda_attention_smem(const cuda_attn_kernel *k)
{
  if (k->wg)
    return (unsigned)(k->br * k->hd * 2 + 2 * 2 * k->bc * k->hd * 2 + 1024);
  return k->tc ? (unsigned)(k->br * k->hd * 2 + k->stages * 2 * k->bc * k->hd * 2) : 0;
}

void
cuda_attention_instance(const cuda_attn_kernel *k, coil_strbuf *src)
{
  char name[96];
  cuda_attention_kernel_name(k, name, sizeof name);
  if (!k->tc)
    coil_strbuf_printf(src, "COIL_ATTN_SIMT(%s, attn_%s)\n", name, dtype_tag(k->dtype));
  else if (k->wg)
    coil_strbuf_printf(src, "COIL_ATTN_WG(%s, attn_%s, %d, %d, %d, %s, %d)\n", name, dtype_tag(k->dtype), k->hd, k->bc,
                       k->br / 64, k->mask ? "true" : "false", k->minb);
  else
    coil_strbuf_printf(src, "COIL_ATTN_TC(%s, attn_%s, %d, %d, %d, %d, %d, %s, %d)\n", name, dtype_tag(k->dtype), k->hd,
                       k->br, k->bc, k->wm, k->stages, k->mask ? "true" : "false", k->minb);
}

void
cuda_attention_module_source(const cuda_attn_kernel *k, coil_strbuf *src)
{
  coil_strbuf_puts(src, cuda_attention_cu);
  cuda_attention_instance(k, src);
}

/* ---- the line ---- */

/* scale (1 when absent) and masked_rows ('nan' when absent) of a line; false with why (an unknown
 * parameter, which could change what the line computes, included). */
static bool
line_params(const coil_line *l, double *scale, bool *masked_nan, char *why, size_t n)
{
  *scale = 1, *masked_nan = true;
  for (int i = 0; i < l->nxparams; i++) {
    const coil_xparam *x = &l->xparams[i];
    if (!x->name || x->kind == COIL_XP_NONE)
      continue;
    if (strcmp(x->name, "scale") == 0) {
      if (x->kind != COIL_XP_FLOAT && x->kind != COIL_XP_INT) {
        snprintf(why, n, "coil.attention: scale is not a number");
        return false;
      }
      *scale = x->kind == COIL_XP_FLOAT ? x->f : (double)x->i;
    } else if (strcmp(x->name, "masked_rows") == 0) {
      if (x->kind != COIL_XP_STR || (strcmp(x->s, "zero") != 0 && strcmp(x->s, "nan") != 0)) {
        snprintf(why, n, "coil.attention: masked_rows is 'zero' or 'nan'");
        return false;
      }
      *masked_nan = strcmp(x->s, "nan") == 0;
    } else if (strcmp(x->name, "is_causal") == 0 && (x->kind == COIL_XP_BOOL || x->kind == COIL_XP_INT)) {
      if (x->i) { /* a causal mask the core passes as a tensor today */
        snprintf(why, n, "coil.attention: is_causal=True (the cuda plugin takes the causal mask as a tensor)");
        return false;
      }
    } else {
      snprintf(why, n, "coil.attention: unknown parameter %s (the cuda plugin knows scale and masked_rows)", x->name);
      return false;
    }
  }
  return true;
}

bool
cuda_attention_line_ok(const coil_wir_program *p, const coil_line *l, char *why, size_t n)
{
  if (l->nouts != 1 || (l->nargs != 3 && l->nargs != 4)) {
    snprintf(why, n, "coil.attention takes q, k, v and an optional mask, and gives one output (here %d and %d)", l->nargs,
             l->nouts);
    return false;
  }
  const coil_buffer *out = &p->buffers[l->outs[0]];
  if (!dtype_tag(out->dtype)) {
    snprintf(why, n, "coil.attention on %s (the cuda plugin does f16, bf16, f32 and f64)", coil_dtype_name(out->dtype));
    return false;
  }
  if (out->rank < 3 || out->rank > 2 + CUDA_ATTN_MAX_BATCH) {
    snprintf(why, n, "coil.attention of rank %d (the cuda plugin does ranks 3 to %d)", out->rank, 2 + CUDA_ATTN_MAX_BATCH);
    return false;
  }
  static const char *const names[] = {"q", "k", "v", "the mask"};
  for (int i = 0; i < l->nargs; i++) {
    const coil_buffer *b = &p->buffers[l->args[i]];
    if (b->dtype != out->dtype || b->rank != out->rank) {
      snprintf(why, n, "coil.attention: %s is %s of rank %d, the output %s of rank %d (the cuda plugin needs one dtype and "
               "rank)", names[i], coil_dtype_name(b->dtype), b->rank, coil_dtype_name(out->dtype), out->rank);
      return false;
    }
  }
  double scale;
  bool masked_nan;
  return line_params(l, &scale, &masked_nan, why, n);
}

/* ---- compile: the kernels a program needs ---- */

struct cuda_attn_build {
  int nkernels;
  cuda_attn_kernel *kernels;
  int nlines;
  int *simt, *tc; /* per line of the program: a kernel, or -1 */
};

void
cuda_attention_build_free(cuda_attn_build *b)
{
  if (!b)
    return;
  free(b->kernels);
  free(b->simt);
  free(b->tc);
  free(b);
}

static bool
same_kernel(const cuda_attn_kernel *a, const cuda_attn_kernel *b)
{
  return a->dtype == b->dtype && a->tc == b->tc && a->wg == b->wg && a->mask == b->mask && a->hd == b->hd &&
         a->br == b->br && a->bc == b->bc && a->wm == b->wm && a->stages == b->stages && a->minb == b->minb;
}

static int
kernel_index(cuda_attn_build *b, const cuda_attn_kernel *k)
{
  for (int i = 0; i < b->nkernels; i++)
    if (same_kernel(&b->kernels[i], k))
      return i;
  b->kernels[b->nkernels] = *k;
  return b->nkernels++;
}

static bool
is_const(const coil_sym *s, int64_t v)
{
  int64_t x;
  return coil_sym_is_const(s, &x) && x == v;
}

/* Whether tile t serves head dim hd (with a mask or not) on arch: attn_wg on sm_90 alone (sm_90a's
 * instructions are not in later archs), and not where the options ask for the mma.sync kernel
 * (attention_kernel = mma, or an attention_tile, which is its tile). */
static bool
tile_fits(const cuda_attn_kernel *t, const cuda_options *opt, int arch, int64_t hd, bool mask)
{
  if (t->hd != hd || t->mask != mask || arch < t->sm)
    return false;
  return !t->wg || (arch == 90 && !opt->attn_mma && !opt->attn_tile[0]);
}

/* The tensor-core kernel for line l, when what the program says allows it. */
static bool
tc_kernel(const coil_wir_program *p, const coil_line *l, const cuda_options *opt, int arch, cuda_attn_kernel *k)
{
  const coil_buffer *out = &p->buffers[l->outs[0]];
  int r = out->rank;
  int64_t hd = 0;
  if (opt->attn_simt || arch < 80 || (out->dtype != COIL_F16 && out->dtype != COIL_BF16) ||
      !coil_sym_is_const(out->sizes[r - 1], &hd) || !is_const(out->strides[r - 1], 1))
    return false;
  for (int i = 0; i < 3; i++) {
    const coil_buffer *b = &p->buffers[l->args[i]];
    if (!is_const(b->sizes[r - 1], hd) || !is_const(b->strides[r - 1], 1))
      return false;
  }
  for (size_t i = 0; i < sizeof tc_tiles / sizeof *tc_tiles; i++)
    if (tile_fits(&tc_tiles[i], opt, arch, hd, l->nargs == 4)) {
      *k = tc_tiles[i];
      k->sm = 0;
      if (opt->attn_tile[0]) /* attention_tile */
        k->br = opt->attn_tile[0], k->bc = opt->attn_tile[1], k->wm = opt->attn_tile[2], k->stages = opt->attn_tile[3],
        k->minb = opt->attn_tile[4];
      k->dtype = out->dtype, k->mask = l->nargs == 4;
      return true;
    }
  return false;
}

/* The statement query's answer for a coil.attention call: yes where the tensor-core kernel runs
 * it (f16/bf16, a head dim with a tile on this arch, unit last strides), no elsewhere, where the
 * core's bmm, softmax and bmm through cuBLAS beat the SIMT kernel by about 10x (4.2 ms against
 * 0.43 for 8x16x1024x64 f16 on an H100, 2026-11-27). Run time may still fall back to SIMT
 * (alignment), which stays correct. */
bool
cuda_attention_fast(const coil_plugin_stmt *st, const cuda_options *opt, int sm)
{
  if (st->noutputs != 1 || st->ninputs < 3 || st->ninputs > 4 || opt->attn_simt || sm < 80)
    return false;
  const coil_plugin_value *o = st->outputs[0];
  int r = o->rank;
  int64_t hd = o->sizes[r - 1];
  if (r < 3 || (o->dtype != COIL_F16 && o->dtype != COIL_BF16) || hd < 0)
    return false;
  for (size_t i = 0; i < 3; i++) {
    const coil_plugin_value *b = st->inputs[i];
    if (b->rank != r || b->sizes[r - 1] != hd || b->strides[r - 1] != 1)
      return false;
  }
  for (size_t i = 0; i < sizeof tc_tiles / sizeof *tc_tiles; i++)
    if (tile_fits(&tc_tiles[i], opt, sm, hd, st->ninputs == 4))
      return true;
  return false;
}

coil_error *
cuda_attention_plan(const coil_wir_program *p, const cuda_options *opt, const char *arch, cuda_attn_build **out)
{
  *out = NULL;
  int lines = 0;
  for (int l = 0; l < p->nlines; l++)
    lines += p->lines[l].kind == COIL_LINE_EXTERN_CALL && p->lines[l].op && strcmp(p->lines[l].op, "coil.attention") == 0;
  if (!lines)
    return NULL;
  cuda_attn_build *b = calloc(1, sizeof *b);
  if (!b || !(b->kernels = calloc((size_t)lines * 2, sizeof *b->kernels)) ||
      !(b->simt = malloc(sizeof(int) * (size_t)p->nlines)) || !(b->tc = malloc(sizeof(int) * (size_t)p->nlines))) {
    cuda_attention_build_free(b);
    return coil_sdk_out_of_memory();
  }
  b->nlines = p->nlines;
  int sm = atoi(arch + 3);
  for (int i = 0; i < p->nlines; i++) {
    const coil_line *l = &p->lines[i];
    b->simt[i] = b->tc[i] = -1;
    if (l->kind != COIL_LINE_EXTERN_CALL || !l->op || strcmp(l->op, "coil.attention") != 0)
      continue;
    cuda_attn_kernel k = {.dtype = p->buffers[l->outs[0]].dtype};
    b->simt[i] = kernel_index(b, &k);
    if (tc_kernel(p, l, opt, sm, &k))
      b->tc[i] = kernel_index(b, &k);
  }
  *out = b;
  return NULL;
}

int
cuda_attention_nkernels(const cuda_attn_build *b)
{
  return b ? b->nkernels : 0;
}

const cuda_attn_kernel *
cuda_attention_kernel(const cuda_attn_build *b, int i)
{
  return &b->kernels[i];
}

/* attention.txt: the plan, read back at load. */
static void
plan_text(const cuda_attn_build *b, coil_strbuf *t)
{
  coil_strbuf_puts(t, "# coil.attention kernels (cuda_attention.c): kernel I (in aI.cubin), then per line of the "
                      "program its SIMT kernel and its tensor-core kernel (-1: none)\n");
  for (int i = 0; i < b->nkernels; i++) {
    const cuda_attn_kernel *k = &b->kernels[i];
    coil_strbuf_printf(t, "kernel %d %s %s %d %d %d %d %d %d %d\n", i, k->wg ? "wg" : k->tc ? "tc" : "simt",
                       dtype_tag(k->dtype), k->mask, k->hd, k->br, k->bc, k->wm, k->stages, k->minb);
  }
  for (int l = 0; l < b->nlines; l++)
    if (b->simt[l] >= 0)
      coil_strbuf_printf(t, "line %d %d %d\n", l, b->simt[l], b->tc[l]);
}

coil_error *
cuda_attention_write(const cuda_attn_build *b, const char *dir)
{
  coil_strbuf t = {0}, src = {0};
  plan_text(b, &t);
  coil_strbuf_puts(&src, cuda_attention_cu);
  for (int i = 0; i < b->nkernels; i++)
    cuda_attention_instance(&b->kernels[i], &src);
  coil_error *e = coil_sdk_write_file(dir, "attention.txt", t.s);
  if (!e)
    e = coil_sdk_write_file(dir, "attention.cu", src.s);
  coil_strbuf_free(&t);
  coil_strbuf_free(&src);
  return e;
}

/* ---- load ---- */

struct cuda_attn_loaded {
  int nkernels;
  cuda_attn_kernel *kernels;
  CUmodule *modules;
  CUfunction *functions; /* NULL: not usable here (a tensor-core kernel whose shared memory the
                            GPU does not give) */
  int nlines;
  int *simt, *tc;        /* per line */
};

void
cuda_attention_unload(coil_artifact *a)
{
  cuda_attn_loaded *L = a->attn;
  if (!L)
    return;
  for (int i = 0; i < L->nkernels; i++)
    if (L->modules[i])
      a->cu->ModuleUnload(L->modules[i]);
  free(L->kernels);
  free(L->modules);
  free(L->functions);
  free(L->simt);
  free(L->tc);
  free(L);
  a->attn = NULL;
}

static coil_dtype
dtype_of(const char *s)
{
  return strcmp(s, "f16") == 0 ? COIL_F16 : strcmp(s, "bf16") == 0 ? COIL_BF16 : strcmp(s, "f32") == 0 ? COIL_F32 : COIL_F64;
}

/* Reads attention.txt into L; false when it is malformed. */
static bool
plan_read(const char *text, const coil_wir_program *p, cuda_attn_loaded *L)
{
  int n = 0;
  for (const char *s = text; (s = strstr(s, "\nkernel ")); s++)
    n++;
  if (!(L->kernels = calloc((size_t)n + 1, sizeof *L->kernels)) || !(L->modules = calloc((size_t)n + 1, sizeof *L->modules)) ||
      !(L->functions = calloc((size_t)n + 1, sizeof *L->functions)) ||
      !(L->simt = malloc(sizeof(int) * ((size_t)p->nlines + 1))) || !(L->tc = malloc(sizeof(int) * ((size_t)p->nlines + 1))))
    return false;
  L->nlines = p->nlines;
  for (int l = 0; l < p->nlines; l++)
    L->simt[l] = L->tc[l] = -1;
  for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
    int i, mask, line, simt, tc;
    char kind[8], dt[8];
    cuda_attn_kernel k = {0};
    if (sscanf(s, "kernel %d %7s %7s %d %d %d %d %d %d %d", &i, kind, dt, &mask, &k.hd, &k.br, &k.bc, &k.wm, &k.stages,
               &k.minb) == 10) {
      if (i != L->nkernels || i >= n ||
          (strcmp(kind, "tc") != 0 && strcmp(kind, "wg") != 0 && strcmp(kind, "simt") != 0))
        return false;
      k.tc = strcmp(kind, "simt") != 0, k.wg = strcmp(kind, "wg") == 0, k.mask = mask != 0, k.dtype = dtype_of(dt);
      L->kernels[L->nkernels++] = k;
    } else if (sscanf(s, "line %d %d %d", &line, &simt, &tc) == 3) {
      if (line < 0 || line >= p->nlines || simt < 0 || simt >= L->nkernels || tc < -1 || tc >= L->nkernels)
        return false;
      L->simt[line] = simt, L->tc[line] = tc;
    }
  }
  return true;
}

coil_error *
cuda_attention_load(coil_artifact *a, const char *dir)
{
  const coil_wir_program *p = a->program;
  bool any = false;
  for (int l = 0; l < p->nlines; l++)
    any = any || (p->lines[l].kind == COIL_LINE_EXTERN_CALL && p->lines[l].op && strcmp(p->lines[l].op, "coil.attention") == 0);
  if (!any)
    return NULL;
  char path[4200];
  size_t len = 0;
  snprintf(path, sizeof path, "%s/attention.txt", dir);
  char *text = coil_sdk_read_file(path, 1u << 20, &len);
  if (!text)
    return coil_sdk_error(COIL_ERR_IO, "cuda: cannot read %s (the program has coil.attention lines)", path);
  cuda_attn_loaded *L = a->attn = calloc(1, sizeof *L);
  if (!L) {
    free(text);
    return coil_sdk_out_of_memory();
  }
  bool ok = plan_read(text, p, L);
  free(text);
  if (!ok)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "cuda: %s is malformed", path);
  int optin = 0;
  a->cu->DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, a->dev);
  for (int i = 0; i < L->nkernels; i++) {
    const cuda_attn_kernel *k = &L->kernels[i];
    char name[96];
    cuda_attention_kernel_name(k, name, sizeof name);
    snprintf(path, sizeof path, "%s/a%d.cubin", dir, i);
    char *cubin = coil_sdk_read_file(path, 64u << 20, &len);
    if (!cubin)
      return coil_sdk_error(COIL_ERR_IO, "cuda: cannot read %s", path);
    CUresult r = a->cu->ModuleLoadData(&L->modules[i], cubin);
    free(cubin);
    const char *call = "cuModuleLoadData";
    if (!r) {
      call = "cuModuleGetFunction";
      r = a->cu->ModuleGetFunction(&L->functions[i], L->modules[i], name);
    }
    if (r) {
      const char *s = NULL;
      a->cu->GetErrorString(r, &s);
      return coil_sdk_error(COIL_ERR_RUNTIME, "cuda: %s failed for %s (%s): %s (%d)", call, name, path, s ? s : "?", r);
    }
    /* the kernel's dynamic shared memory, asked for (more than 48 KB is the kernel's only
     * then); a GPU that has less leaves the lines to the SIMT kernel */
    unsigned smem = cuda_attention_smem(k);
    if (smem && ((optin > 0 && (int)smem > optin) ||
                 (a->cu->FuncSetAttribute(L->functions[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem) &&
                  smem > SMEM_DEFAULT))) {
      L->functions[i] = NULL;
      if (a->host && COIL_STRUCT_HAS(a->host, coil_host_api, log) && a->host->log) {
        char line[300];
        snprintf(line, sizeof line, "%s needs %u bytes of shared memory, more than this GPU gives a block (%d): "
                 "its coil.attention lines run on the SIMT kernel", name, smem, optin);
        a->host->log(a->host, COIL_LOG_WARN, line);
      }
    }
  }
  return NULL;
}

/* ---- run ---- */

static int64_t
stride_of(const coil_gpu_buf *b, int d)
{
  return b->sizes[d] == 1 ? 0 : b->strides[d];
}

static bool
aligned16(const coil_gpu_buf *b, size_t es)
{
  return b->ptr % 16 == 0 && (stride_of(b, b->rank - 2) * (int64_t)es) % 16 == 0;
}

const char *
cuda_attention_prepare(const coil_gpu_buf *const ops[4], const coil_gpu_buf *out, double scale, bool masked_nan,
                       const cuda_attn_kernel *tc, cuda_attn_launch *L, char *why, size_t n)
{
  memset(L, 0, sizeof *L);
  const coil_gpu_buf *q = ops[0], *k = ops[1], *v = ops[2], *m = ops[3];
  const int r = out->rank, nb = r - 2;
  if (r < 3 || r > 2 + CUDA_ATTN_MAX_BATCH || q->rank != r || k->rank != r || v->rank != r || (m && m->rank != r))
    return "q, k, v, the mask and the output must have one rank, 3 to 8";
  const int64_t Lq = q->sizes[nb], E = q->sizes[nb + 1], S = k->sizes[nb], Ev = v->sizes[nb + 1];
  if (k->sizes[nb + 1] != E || v->sizes[nb] != S || out->sizes[nb] != Lq || out->sizes[nb + 1] != Ev) {
    snprintf(why, n, "q [.., %" PRId64 ", %" PRId64 "], k [.., %" PRId64 ", %" PRId64 "], v [.., %" PRId64 ", %" PRId64
             "] and the output [.., %" PRId64 ", %" PRId64 "] do not fit", Lq, E, k->sizes[nb], k->sizes[nb + 1],
             v->sizes[nb], Ev, out->sizes[nb], out->sizes[nb + 1]);
    return why;
  }
  if (m && ((m->sizes[nb] != 1 && m->sizes[nb] != Lq) || (m->sizes[nb + 1] != 1 && m->sizes[nb + 1] != S))) {
    snprintf(why, n, "a mask of [.., %" PRId64 ", %" PRId64 "] for scores [.., %" PRId64 ", %" PRId64 "]", m->sizes[nb],
             m->sizes[nb + 1], Lq, S);
    return why;
  }
  cuda_attn_params *P = &L->prm;
  /* the batch dims: out's, each operand's of the same size or 1 (stride 0); size-1 dims
   * dropped, neighbours merged where every operand's strides nest */
  int64_t bs[CUDA_ATTN_MAX_BATCH], st[5][CUDA_ATTN_MAX_BATCH], nbatch = 1;
  const coil_gpu_buf *all[5] = {q, k, v, m, out};
  int kb = 0;
  for (int d = 0; d < nb; d++) {
    const int64_t B = out->sizes[d];
    for (int t = 0; t < 4; t++)
      if (all[t] && all[t]->sizes[d] != B && all[t]->sizes[d] != 1) {
        snprintf(why, n, "batch dim %d is %" PRId64 " in %s and %" PRId64 " in the output", d, all[t]->sizes[d],
                 t == 0 ? "q" : t == 1 ? "k" : t == 2 ? "v" : "the mask", B);
        return why;
      }
    nbatch *= B;
    if (B == 1)
      continue;
    bool merge = kb > 0;
    for (int t = 0; t < 5 && merge; t++)
      merge = !all[t] || st[t][kb - 1] == stride_of(all[t], d) * B;
    if (merge) {
      bs[kb - 1] *= B;
      for (int t = 0; t < 5; t++)
        st[t][kb - 1] = all[t] ? stride_of(all[t], d) : 0;
      continue;
    }
    bs[kb] = B;
    for (int t = 0; t < 5; t++)
      st[t][kb] = all[t] ? stride_of(all[t], d) : 0;
    kb++;
  }
  if (!nbatch || !Lq || !Ev)
    return NULL; /* nothing to do: L->path is CUDA_ATTN_NOTHING */
  *P = (cuda_attn_params){
      .q = q->ptr, .k = k->ptr, .v = v->ptr, .mask = m ? m->ptr : 0, .out = out->ptr, .L = Lq, .S = S, .E = E, .Ev = Ev,
      .q_l = stride_of(q, nb), .q_e = stride_of(q, nb + 1), .k_s = stride_of(k, nb), .k_e = stride_of(k, nb + 1),
      .v_s = stride_of(v, nb), .v_e = stride_of(v, nb + 1), .m_l = m ? stride_of(m, nb) : 0,
      .m_s = m ? stride_of(m, nb + 1) : 0, .o_l = stride_of(out, nb), .o_e = stride_of(out, nb + 1), .nb = kb,
      .masked_nan = S > 0 && masked_nan, /* no keys: zeros either way */
      .scale = scale, .scale_log2 = (float)(scale * 1.4426950408889634)};
  bool tc_ok = true;
  for (int d = 0; d < kb; d++) {
    P->bsize[d] = bs[d], P->q_b[d] = st[0][d], P->k_b[d] = st[1][d], P->v_b[d] = st[2][d], P->m_b[d] = st[3][d],
    P->o_b[d] = st[4][d];
    tc_ok = tc_ok && P->q_b[d] % 8 == 0 && P->k_b[d] % 8 == 0 && P->v_b[d] % 8 == 0 && P->o_b[d] % 8 == 0;
  }
  /* the tensor-core kernel: its dtype, head dim and mask; unit last strides, every row of 16
   * bytes at a 16-byte boundary; a positive scale (its softmax takes the max before scaling);
   * L and S below 2^31 (int row numbers) */
  size_t es = coil_dtype_size(out->dtype);
  /* attn_wg: row strides below 2^24 (its tile loader's offsets are 32-bit) */
  if (tc && tc->wg)
    tc_ok = tc_ok && P->q_l < (1 << 24) && P->k_s < (1 << 24) && P->v_s < (1 << 24);
  if (tc && tc_ok && tc->dtype == out->dtype && tc->mask == (m != NULL) && E == tc->hd && Ev == tc->hd && S > 0 &&
      S <= 2147483647 && Lq <= 2147483647 && scale > 0 && isfinite(scale) && P->q_e == 1 && P->k_e == 1 && P->v_e == 1 && P->o_e == 1 &&
      aligned16(q, es) && aligned16(k, es) && aligned16(v, es) && aligned16(out, es)) {
    L->path = CUDA_ATTN_TC;
    P->q_tiles = (Lq + tc->br - 1) / tc->br;
    L->threads = cuda_attention_threads(tc), L->smem = cuda_attention_smem(tc), L->grid_y = 1;
  } else {
    L->path = CUDA_ATTN_SIMT;
    P->q_tiles = (Lq + SIMT_ROWS - 1) / SIMT_ROWS;
    L->threads = SIMT_THREADS, L->smem = 0, L->grid_y = (unsigned)((Ev + SIMT_COLS - 1) / SIMT_COLS);
    if (Ev > (int64_t)65535 * SIMT_COLS) {
      snprintf(why, n, "v has %" PRId64 " columns (at most %d)", Ev, 65535 * SIMT_COLS);
      return why;
    }
  }
  if (nbatch > (int64_t)2147483647 / P->q_tiles) {
    snprintf(why, n, "%" PRId64 " batch indices of %" PRId64 " query rows are more blocks than a grid holds", nbatch, Lq);
    return why;
  }
  L->grid_x = (unsigned)(nbatch * P->q_tiles);
  return NULL;
}

coil_error *
cuda_attention_run(coil_gpu_run *c, const coil_line *l)
{
  coil_artifact *a = c->user;
  const cuda_attn_loaded *A = a->attn;
  if (!A || c->line >= A->nlines || A->simt[c->line] < 0)
    return coil_gpu_run_fail(c, COIL_ERR_INTERNAL, "coil.attention has no kernel in the artifact (attention.txt)");
  if (l->nouts != 1 || l->nargs < 3 || l->nargs > 4)
    return coil_gpu_run_fail(c, COIL_ERR_INVALID_ARGUMENT, "coil.attention of %d inputs and %d outputs", l->nargs, l->nouts);
  char why[400];
  double scale;
  bool masked_nan;
  if (!line_params(l, &scale, &masked_nan, why, sizeof why))
    return coil_gpu_run_fail(c, COIL_ERR_INVALID_ARGUMENT, "%s", why);
  const coil_gpu_buf *ops[4] = {&c->bufs[l->args[0]], &c->bufs[l->args[1]], &c->bufs[l->args[2]],
                                l->nargs > 3 ? &c->bufs[l->args[3]] : NULL};
  int ti = A->tc[c->line];
  const cuda_attn_kernel *tc = ti >= 0 && A->functions[ti] ? &A->kernels[ti] : NULL;
  cuda_attn_launch L;
  const char *err = cuda_attention_prepare(ops, &c->bufs[l->outs[0]], scale, masked_nan, tc, &L, why, sizeof why);
  if (err)
    return coil_gpu_run_fail(c, COIL_ERR_INVALID_ARGUMENT, "coil.attention: %s", err);
  if (L.path == CUDA_ATTN_NOTHING)
    return NULL;
  CUfunction f = A->functions[L.path == CUDA_ATTN_TC ? ti : A->simt[c->line]];
  void *params[] = {&L.prm};
  CUresult r = a->cu->LaunchKernel(f, L.grid_x, L.grid_y, 1, L.threads, 1, 1, L.smem, a->stream, params, NULL);
  return r ? coil_gpu_run_rtfail(c, (int)r, "cuLaunchKernel (coil.attention)") : NULL;
}
