/* attention_host.hpp — the host's "GPU" for cuda_attention.cu (tests/attention_host.c): what the
 * kernels' device prelude spells with CUDA and PTX, spelled in C++ for the CPU, so that the test
 * runs the kernels' own text. A block's threads are fibers (ucontext) on one OS thread, switched
 * only where a thread waits: at a block barrier (__syncthreads) and at every warp-wide
 * instruction, each of which is a rendezvous of the warp's 32 lanes (the inputs of all lanes
 * posted, then each lane computes its result from them as the PTX ISA defines it):
 *   shfl.bfly; vote.any; ldmatrix .x4 (.trans); mma.sync m16n8k16 .row.col f32 += f16/bf16 * f16/bf16;
 *   wgmma.mma_async m64nNk16 (a rendezvous of the warpgroup's 128 threads; the 128-byte swizzle);
 *   cp.async 16 bytes with zero fill, whose copies are made only at the cp.async.wait_group that
 *   covers them (as late as the hardware may make them: a missing wait or barrier shows).
 * The scheduler runs the runnable fibers in an order the test picks (forward, backward, shuffled)
 * so that races between warps change the result. Blocks run one after the other. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#define COIL_ATTN_HOST 1
#define ATTN_INL inline
#define ATTN_DEV static inline
#define ATTN_SHARED static
#define ATTN_DYN_SMEM(name) unsigned char *name = attn_host::smem
#define ATTN_ENTRY(name, threads, minb, call)                              \
  extern "C" void name(const void *pp_)                                    \
  {                                                                        \
    const coil_attn_params &p = *(const coil_attn_params *)pp_;            \
    call;                                                                  \
  }

struct uint4 {
  unsigned x, y, z, w;
};

namespace attn_host {
struct copy {
  unsigned char *dst;
  const unsigned char *src; /* NULL: zeros */
};
struct fiber {
  ucontext_t ctx;
  bool done;
  unsigned coll;                          /* warp-wide instructions so far (the exchange's parity) */
  unsigned gcoll;                         /* warpgroup-wide ones */
  std::vector<copy> open;                 /* cp.async since the last commit */
  std::vector<std::vector<copy>> groups;  /* committed, not yet waited for */
};
static fiber *th;
static unsigned nthreads, cur, bid_x, bid_y;
static ucontext_t sched;
static unsigned long long wgen[32], bgen;
static unsigned warrive[32], barrive;
static uint64_t xch[32][2][32][6]; /* per warp, parity, lane: a warp-wide instruction's inputs */
static unsigned long long ggen[8];
static unsigned garrive[8];
static uint64_t gxch[8][2][128][5]; /* per warpgroup, parity, thread: a wgmma's inputs */
static unsigned char *smem;
static size_t smem_size;             /* its bytes (a cp.async, ldmatrix or wgmma outside them aborts) */
static unsigned long long idle;    /* switches since a barrier last opened (a deadlock check) */

static void
yield()
{
  if (++idle > 100000ull * nthreads) {
    fprintf(stderr, "attn_host: deadlock: every thread waits at a barrier that cannot open\n");
    abort();
  }
  swapcontext(&th[cur].ctx, &sched);
}

static void
warp_wait()
{
  const unsigned w = cur >> 5, lanes = std::min(32u, nthreads - 32 * w);
  const unsigned long long g = wgen[w];
  if (++warrive[w] == lanes) {
    warrive[w] = 0, wgen[w]++, idle = 0;
    return;
  }
  while (wgen[w] == g)
    yield();
}

static void
block_wait()
{
  const unsigned long long g = bgen;
  if (++barrive == nthreads) {
    barrive = 0, bgen++, idle = 0;
    return;
  }
  while (bgen == g)
    yield();
}

/* Posts this lane's inputs of a warp-wide instruction; returns the exchange of the warp, valid
 * once warp_wait returns (until the warp's instruction after next). */
static uint64_t (*post(const uint64_t *in, int n))[6]
{
  const unsigned w = cur >> 5, l = cur & 31, par = th[cur].coll++ & 1;
  memcpy(xch[w][par][l], in, sizeof(uint64_t) * (size_t)n);
  warp_wait();
  return xch[w][par];
}

/* The same for the 128 threads of a warpgroup (wgmma) */
static uint64_t (*post_wg(const uint64_t *in, int n))[5]
{
  const unsigned G = cur >> 7, l = cur & 127, par = th[cur].gcoll++ & 1;
  if (nthreads % 128) {
    fprintf(stderr, "attn_host: a warpgroup instruction in a block of %u threads\n", nthreads);
    abort();
  }
  memcpy(gxch[G][par][l], in, sizeof(uint64_t) * (size_t)n);
  const unsigned long long gen = ggen[G];
  if (++garrive[G] == 128) {
    garrive[G] = 0, ggen[G]++, idle = 0;
  } else {
    while (ggen[G] == gen)
      yield();
  }
  return gxch[G][par];
}

static float
h2f(uint16_t h)
{
  const uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
  uint32_t u;
  if (e == 31)
    u = s | 0x7f800000u | (m << 13);
  else if (e)
    u = s | ((e + 112) << 23) | (m << 13);
  else if (!m)
    u = s;
  else { /* subnormal */
    int k = 0;
    uint32_t mm = m;
    while (!(mm & 1024))
      mm <<= 1, k++;
    u = s | ((uint32_t)(113 - k) << 23) | ((mm & 1023) << 13);
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t
f2h(float f) /* round to nearest even, subnormals and NaN kept */
{
  uint32_t u;
  memcpy(&u, &f, 4);
  const uint16_t s = (uint16_t)((u >> 16) & 0x8000);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return (uint16_t)(s | 0x7e00);
  if (a >= 0x477ff000u) /* 65520 and above round to inf */
    return (uint16_t)(s | 0x7c00);
  if (a < 0x38800000u) { /* below 2^-14: a subnormal half (or 0) */
    const double q = (double)fabsf(f) * 16777216.0; /* units of 2^-24 */
    return (uint16_t)(s | (uint16_t)nearbyint(q));
  }
  const uint32_t r = a + 0xfffu + ((a >> 13) & 1);
  return (uint16_t)(s | (uint16_t)((r - 0x38000000u) >> 13));
}

static float
b2f(uint16_t h)
{
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t
f2b(float f)
{
  uint32_t u;
  memcpy(&u, &f, 4);
  if (f != f)
    return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

} /* namespace attn_host */

ATTN_DEV int attn_tid() { return (int)attn_host::cur; }
ATTN_DEV int64_t attn_bidx() { return attn_host::bid_x; }
ATTN_DEV int64_t attn_bidy() { return attn_host::bid_y; }
ATTN_DEV void attn_bar() { attn_host::block_wait(); }
ATTN_DEV void attn_warp_bar() { attn_host::warp_wait(); }
ATTN_DEV float attn_inf() { return INFINITY; }
ATTN_DEV float attn_nan() { return NAN; }
ATTN_DEV float attn_h2f(uint16_t h) { return attn_host::h2f(h); }
ATTN_DEV uint16_t attn_f2h(float f) { return attn_host::f2h(f); }
ATTN_DEV float attn_b2f(uint16_t h) { return attn_host::b2f(h); }
ATTN_DEV uint16_t attn_f2b(float f) { return attn_host::f2b(f); }
ATTN_DEV float attn_ex2(float x) { return exp2f(x); }
ATTN_DEV uint32_t attn_smem_u32(const void *p) { return (uint32_t)((const unsigned char *)p - attn_host::smem); }

template <typename T>
static inline T
attn_shfl_xor(T v, int m)
{
  uint64_t in = 0;
  memcpy(&in, &v, sizeof v);
  uint64_t(*x)[6] = attn_host::post(&in, 1);
  T r;
  memcpy(&r, &x[(attn_host::cur & 31) ^ (unsigned)m][0], sizeof r);
  return r;
}

ATTN_DEV bool
attn_any(bool v)
{
  const uint64_t in = v;
  uint64_t(*x)[6] = attn_host::post(&in, 1);
  const unsigned w = attn_host::cur >> 5, lanes = std::min(32u, attn_host::nthreads - 32 * w);
  bool any = false;
  for (unsigned l = 0; l < lanes; l++)
    any = any || x[l][0];
  return any;
}

ATTN_DEV void
attn_cp16(uint32_t dst, const void *src, bool full)
{
  if ((size_t)dst + 16 > attn_host::smem_size) {
    fprintf(stderr, "attn_host: cp.async to shared byte %u, past the block's %zu\n", dst, attn_host::smem_size);
    abort();
  }
  attn_host::th[attn_host::cur].open.push_back({attn_host::smem + dst, full ? (const unsigned char *)src : NULL});
}
ATTN_DEV void
attn_cp_commit()
{
  attn_host::fiber &f = attn_host::th[attn_host::cur];
  f.groups.push_back(f.open);
  f.open.clear();
}
template <int N>
static inline void
attn_cp_wait()
{
  attn_host::fiber &f = attn_host::th[attn_host::cur];
  while (f.groups.size() > (size_t)N) {
    for (const attn_host::copy &c : f.groups.front())
      if (c.src)
        memcpy(c.dst, c.src, 16);
      else
        memset(c.dst, 0, 16);
    f.groups.erase(f.groups.begin());
  }
}

/* ldmatrix .x4: lane l's register m holds, of the 8x8 matrix m whose row i lane 8 m + i points
 * at, elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1); .trans: (2 (l % 4), l / 4) and
 * (2 (l % 4) + 1, l / 4); the first in the low half. */
static inline void
attn_ldsm(uint32_t *r, uint32_t addr, bool trans)
{
  const uint64_t in = addr;
  uint64_t(*x)[6] = attn_host::post(&in, 1);
  const unsigned l = attn_host::cur & 31, g = l >> 2, q = l & 3;
  for (int m = 0; m < 4; m++) {
    uint16_t e[2];
    for (int k = 0; k < 2; k++) {
      const unsigned row = trans ? 2 * q + k : g, col = trans ? g : 2 * q + k;
      const uint64_t at = x[8 * m + row][0] + 2 * col;
      if (at + 2 > attn_host::smem_size) {
        fprintf(stderr, "attn_host: ldmatrix at shared byte %llu, past the block's %zu\n", (unsigned long long)at,
                attn_host::smem_size);
        abort();
      }
      memcpy(&e[k], attn_host::smem + at, 2);
    }
    r[m] = (uint32_t)e[0] | (uint32_t)e[1] << 16;
  }
}
ATTN_DEV void attn_ldsm4(uint32_t *r, uint32_t addr) { attn_ldsm(r, addr, false); }
ATTN_DEV void attn_ldsm4t(uint32_t *r, uint32_t addr) { attn_ldsm(r, addr, true); }

/* mma.sync.m16n8k16.row.col: A 16x16 (lane l = 4 g + q: a0 = A[g][2q, 2q+1], a1 = A[g+8][2q..],
 * a2 = A[g][2q+8..], a3 = A[g+8][2q+8..]), B 16x8 (b0 = B[2q, 2q+1][g], b1 = B[2q+8..][g]),
 * D 16x8 (d0, d1 = D[g][2q, 2q+1], d2, d3 = D[g+8][2q..]) */
static inline void
attn_mma_host(float *d, const uint32_t *a, uint32_t b0, uint32_t b1, bool bf)
{
  const uint64_t in[6] = {a[0], a[1], a[2], a[3], b0, b1};
  uint64_t(*x)[6] = attn_host::post(in, 6);
  float A[16][16], B[16][8];
  for (unsigned l = 0; l < 32; l++) {
    const unsigned g = l >> 2, q = l & 3;
    for (int h = 0; h < 2; h++) {
      float v[6];
      for (int i = 0; i < 6; i++) {
        const uint16_t u = (uint16_t)(x[l][i] >> (16 * h));
        v[i] = bf ? attn_host::b2f(u) : attn_host::h2f(u);
      }
      A[g][2 * q + h] = v[0], A[g + 8][2 * q + h] = v[1], A[g][2 * q + 8 + h] = v[2], A[g + 8][2 * q + 8 + h] = v[3];
      B[2 * q + h][g] = v[4], B[2 * q + 8 + h][g] = v[5];
    }
  }
  const unsigned l = attn_host::cur & 31, g = l >> 2, q = l & 3;
  for (int i = 0; i < 4; i++) {
    const unsigned row = g + 8 * (i >> 1), col = 2 * q + (i & 1);
    float s = d[i];
    for (int k = 0; k < 16; k++)
      s += A[row][k] * B[k][col];
    d[i] = s;
  }
}

/* wgmma (cuda_attention.cu's attn_wg_ss, attn_wg_rs): the operands in shared memory through
 * their descriptors, as PTX defines the 128-byte swizzle (the only mode the kernels use; any
 * other aborts): element (row r, k) of a K-major matrix at start + (r / 8) SBO + (r % 8) 128 +
 * 2 k, element (k, n) of an MN-major one at start + (n / 64) LBO + (k / 8) SBO + (k % 8) 128 +
 * 2 (n % 64), each address then XOR-ed in bits 4-6 with bits 7-9. Computed when issued (the
 * hardware may read the operands until the wait: a kernel that changes them before is wrong on
 * the GPU and not seen here). */
static inline float
attn_wg_elem(uint64_t desc, bool mn_major, int rn, int k, bool bf)
{
  const uint32_t start = (uint32_t)(desc & 0x3FFF) << 4, lbo = (uint32_t)((desc >> 16) & 0x3FFF) << 4,
                 sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4;
  if (desc >> 62 != 1 || ((desc >> 49) & 7)) {
    fprintf(stderr, "attn_host: a wgmma descriptor (0x%llx) of a layout other than the 128-byte swizzle\n",
            (unsigned long long)desc);
    abort();
  }
  uint32_t a = mn_major
                   ? start + (uint32_t)(rn >> 6) * lbo + (uint32_t)(k >> 3) * sbo + (uint32_t)(k & 7) * 128 + 2u * (rn & 63)
                   : start + (uint32_t)(rn >> 3) * sbo + (uint32_t)(rn & 7) * 128 + 2u * (uint32_t)k;
  a ^= ((a >> 7) & 7) << 4;
  if ((size_t)a + 2 > attn_host::smem_size) {
    fprintf(stderr, "attn_host: a wgmma operand at shared byte %u, past the block's %zu\n", a, attn_host::smem_size);
    abort();
  }
  uint16_t u;
  memcpy(&u, attn_host::smem + a, 2);
  return bf ? attn_host::b2f(u) : attn_host::h2f(u);
}
/* this thread's rows and columns of D: d[i] at (16 w + g + 8 ((i >> 1) & 1), 8 (i >> 2) + 2 t + (i & 1)) */
static inline int
attn_wg_row(int i)
{
  return (int)((attn_host::cur >> 5) & 3) * 16 + (int)((attn_host::cur & 31) >> 2) + 8 * ((i >> 1) & 1);
}
static inline int attn_wg_col(int i) { return 8 * (i >> 2) + 2 * (int)(attn_host::cur & 3) + (i & 1); }

template <typename Tag>
static inline void
attn_wg_ss(float *d, uint64_t da, uint64_t db, int acc, Tag)
{
  const uint64_t in[3] = {da, db, (uint64_t)acc};
  uint64_t(*x)[5] = attn_host::post_wg(in, 3);
  for (int l = 0; l < 128; l++)
    if (x[l][0] != da || x[l][1] != db || x[l][2] != (uint64_t)acc) {
      fprintf(stderr, "attn_host: the threads of a warpgroup issued one wgmma with different operands\n");
      abort();
    }
  for (int i = 0; i < Tag::N / 2; i++) {
    float s = acc ? d[i] : 0.f;
    for (int k = 0; k < 16; k++)
      s += attn_wg_elem(da, false, attn_wg_row(i), k, Tag::BF) * attn_wg_elem(db, false, attn_wg_col(i), k, Tag::BF);
    d[i] = s;
  }
}
/* A from the registers of the warpgroup: a[h + 2 hi] of lane 4 g + t of warp w holds row 16 w + g
 * + 8 h, columns 8 hi + 2 t and + 1 (the lower in the low half) */
template <typename Tag>
static inline void
attn_wg_rs(float *d, const uint32_t *a, uint64_t db, Tag)
{
  const uint64_t in[5] = {a[0], a[1], a[2], a[3], db};
  uint64_t(*x)[5] = attn_host::post_wg(in, 5);
  float A[64][16];
  for (int l = 0; l < 128; l++) {
    if (x[l][4] != db) {
      fprintf(stderr, "attn_host: the threads of a warpgroup issued one wgmma with different descriptors\n");
      abort();
    }
    const int w = l >> 5, g = (l & 31) >> 2, t = l & 3;
    for (int r = 0; r < 4; r++)
      for (int e = 0; e < 2; e++) {
        const uint16_t u = (uint16_t)(x[l][r] >> (16 * e));
        A[16 * w + g + 8 * (r & 1)][8 * (r >> 1) + 2 * t + e] = Tag::BF ? attn_host::b2f(u) : attn_host::h2f(u);
      }
  }
  for (int i = 0; i < Tag::N / 2; i++) {
    float s = d[i];
    for (int k = 0; k < 16; k++)
      s += A[attn_wg_row(i)][k] * attn_wg_elem(db, true, attn_wg_col(i), k, Tag::BF);
    d[i] = s;
  }
}
/* issued when called (above): nothing left to order or wait for */
ATTN_DEV void attn_wg_fence() {}
ATTN_DEV void attn_wg_commit() {}
ATTN_DEV void attn_wg_wait() {}
ATTN_DEV void attn_fence_async() {}

/* the dtype tags are cuda_attention.cu's, defined after this prelude: templates over them */
struct attn_bf16;
template <typename D>
static inline void
attn_mma(float *d, const uint32_t *a, uint32_t b0, uint32_t b1, D)
{
  attn_mma_host(d, a, b0, b1, std::is_same<D, attn_bf16>::value);
}
template <typename D>
static inline uint32_t
attn_pack(float lo, float hi, D)
{
  if (std::is_same<D, attn_bf16>::value)
    return (uint32_t)attn_host::f2b(lo) | (uint32_t)attn_host::f2b(hi) << 16;
  return (uint32_t)attn_host::f2h(lo) | (uint32_t)attn_host::f2h(hi) << 16;
}

namespace attn_host {
static void (*entry)(const void *);
static const void *entry_params;

static void
fiber_main(void)
{
  entry(entry_params);
  th[cur].done = true;
}
} /* namespace attn_host */

/* Runs kernel fn on a grid of gx x gy blocks of `threads` threads with `smem_bytes` of dynamic
 * shared memory (garbage-filled at each block's start) and params; order: 0 runs the fibers
 * first to last, 1 last to first, other values a shuffle seeded by it. Returns 0, or -1 with a
 * message on stderr (a thread left cp.async copies unwaited). */
extern "C" int
attn_host_launch(void (*fn)(const void *), unsigned gx, unsigned gy, unsigned threads, unsigned smem_bytes,
                 const void *params, unsigned order)
{
  using namespace attn_host;
  const size_t stack = 256 << 10;
  std::vector<fiber> fibers(threads);
  std::vector<char> stacks((size_t)threads * stack);
  std::vector<unsigned char> shared(smem_bytes + 16);
  std::vector<unsigned> perm(threads);
  unsigned long long rng = order * 0x9e3779b97f4a7c15ull + 1;
  th = fibers.data(), nthreads = threads, smem = shared.data(), smem_size = smem_bytes, entry = fn, entry_params = params;
  for (unsigned by = 0; by < gy; by++)
    for (unsigned bx = 0; bx < gx; bx++) {
      bid_x = bx, bid_y = by;
      for (size_t i = 0; i < shared.size(); i++) /* garbage, never read before it is written */
        shared[i] = (unsigned char)(0x7f ^ (i * 131));
      memset(wgen, 0, sizeof wgen), memset(warrive, 0, sizeof warrive), bgen = 0, barrive = 0, idle = 0;
      memset(ggen, 0, sizeof ggen), memset(garrive, 0, sizeof garrive);
      for (unsigned t = 0; t < threads; t++) {
        fiber &f = fibers[t];
        f.done = false, f.coll = 0, f.gcoll = 0, f.open.clear(), f.groups.clear();
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks.data() + (size_t)t * stack;
        f.ctx.uc_stack.ss_size = stack;
        f.ctx.uc_link = &sched;
        makecontext(&f.ctx, fiber_main, 0);
        perm[t] = t;
      }
      for (;;) {
        if (order > 1)
          for (unsigned t = threads - 1; t > 0; t--) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            std::swap(perm[t], perm[(rng >> 33) % (t + 1)]);
          }
        bool any = false;
        for (unsigned i = 0; i < threads; i++) {
          const unsigned t = order == 1 ? threads - 1 - i : perm[i];
          if (fibers[t].done)
            continue;
          any = true;
          cur = t;
          swapcontext(&sched, &fibers[t].ctx);
        }
        if (!any)
          break;
      }
      for (unsigned t = 0; t < threads; t++) { /* empty groups may stay; copies nobody waited for were wasted */
        bool left = !fibers[t].open.empty();
        for (const std::vector<copy> &g : fibers[t].groups)
          left = left || !g.empty();
        if (left) {
          fprintf(stderr, "thread %u of block (%u, %u) ended with cp.async copies not waited for\n", t, bx, by);
          return -1;
        }
      }
    }
  return 0;
}
