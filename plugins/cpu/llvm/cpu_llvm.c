/* cpu_llvm.c — the cpu plugin's LLVM code path (libcoil_cpu_llvm.so): Wrapper IR kernels to
 * LLVM IR through LLVM 19's C API, optimised with the new pass manager, emitted as an ELF object
 * in memory, linked into the process by ORC's LLJIT. No C compiler runs.
 *
 * Each module starts as the run-time helpers' bitcode (rt_gen.c, compiled by clang at build
 * time: the C prelude, combining stores, coil_cpu_math.h), so the generated code calls the very
 * helpers the C path includes, and they inline. A kernel is
 *
 *   void NAME_TAG(char *const *bufs, const int64_t *symv, int64_t *oob, int64_t lo, int64_t hi)
 *
 * over the x points [lo, hi) of its flattened x ranges: a loop over rows (the x digits
 * recovered by division once a row) around a loop over the innermost x range, which LLVM's loop
 * vectoriser takes for pointwise kernels. A reduction kernel runs, for each x point, one r loop
 * nest per reduce over the values it needs (recomputing loads, keeping values later loops need
 * in rows on the stack), then one loop for the per-r stores and scans: the C path's plan
 * (plugins/cpu/cpu_codegen.c), built with allocas that mem2reg turns into registers.
 *
 * Errors: the verifier runs on each kernel before any pass; a refusal is an internal error
 * naming the kernel, and the caller keeps the IR. LLVM's diagnostics go to the error message,
 * never to stderr. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h> /* LLVMTemporaryMDNode: self-referencing loop metadata */
#include <llvm-c/Error.h>
#include <llvm-c/ErrorHandling.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cpu_llvm.h"

#define ROW_MAX 16384           /* as the C path: a kept row's elements */
#define ROW_BYTES_MAX (256 * 1024)
#define WELFORD_LANES 16

/* The passes: what the kernels need of default<O2> (inline the helpers, promote the allocas,
 * simplify, hoist, vectorise the loops, unroll the short constant loops vectorising leaves, such
 * as Welford's lanes, and promote what that exposes), a third of its time. instcombine parsed
 * from text checks by default that it reached a fixpoint and ends the process when not: never
 * here. default<O2> gave the same kernel times on coil bench and took 40-50 ms a graph where this
 * takes 20-30 (docs/llvm-codegen-notes.md). */
#define PIPELINE                                                                                         \
  "function(sroa),cgscc(inline),function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,"    \
  "loop-mssa(licm),loop(loop-rotate),loop(indvars),loop-vectorize,instcombine<no-verify-fixpoint>,"  \
  "simplifycfg,loop(loop-unroll-full),sroa,instcombine<no-verify-fixpoint>,simplifycfg),globaldce"

extern const unsigned char coil_cpu_llvm_rt_bc[], coil_cpu_llvm_rt_fma_bc[];
extern const size_t coil_cpu_llvm_rt_bc_size, coil_cpu_llvm_rt_fma_bc_size;

/* ---- one kernel ---- */

typedef struct {
  LLVMContextRef cx;
  LLVMModuleRef m;
  LLVMBuilderRef b;
  coil_wir_program *p;
  const coil_kernel *k;
  LLVMValueRef fn, bufs, symv, oob;
  LLVMValueRef *param;       /* per kernel param: its pointer, loaded once in the entry block */
  LLVMBasicBlockRef entry;   /* allocas go here */
  LLVMValueRef *val;         /* per instruction: its value where it is live */
  LLVMValueRef *var;         /* per sym variable: its value (loops, sizes, gathers) */
  int nvars;
  int *indvar;               /* per instruction: the variable an INDIRECT defines, or -1 */
  bool *per_r, *kept, *done;
  LLVMValueRef *row;         /* per instruction: its kept row (alloca), or NULL */
  int64_t nrow, row_bytes;
  LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, vd;
  LLVMMetadataRef group;     /* the access group of loads and stores in `omp simd` loops */
  int ncalls;                /* calls built so far (call): a loop's math shows as calls in it */
  coil_diag *d;
  bool failed;
} kg;

static LLVMTypeRef
ctype(kg *g, coil_dtype t) /* the compute type: a value in registers */
{
  switch (t) {
  case COIL_F64: return g->f64;
  case COIL_F32: case COIL_F16: case COIL_BF16: return g->f32;
  case COIL_I64: return g->i64;
  case COIL_I32: return g->i32;
  case COIL_I16: return g->i16;
  case COIL_I8: case COIL_U8: return g->i8;
  default: return g->i1;
  }
}

static LLVMTypeRef
stype(kg *g, coil_dtype t) /* the storage type: an element in memory */
{
  if (t == COIL_F16 || t == COIL_BF16)
    return g->i16;
  if (t == COIL_BOOL)
    return g->i8;
  return ctype(g, t);
}

static bool
is_unsigned(coil_dtype t)
{
  return t == COIL_U8 || t == COIL_BOOL;
}

static void
fail(kg *g, const char *what)
{
  if (!g->failed)
    coil_diag_set(g->d, "cpu (llvm): kernel %s: %s", g->k->name, what);
  g->failed = true;
}

/* A helper of the run-time bitcode, or a libm function declared on first use. */
static LLVMValueRef
call(kg *g, const char *name, LLVMTypeRef ret, LLVMValueRef *args, unsigned n)
{
  LLVMValueRef f = LLVMGetNamedFunction(g->m, name);
  LLVMTypeRef ft;
  if (f) {
    ft = LLVMGlobalGetValueType(f);
  } else {
    LLVMTypeRef at[8];
    for (unsigned i = 0; i < n; i++)
      at[i] = LLVMTypeOf(args[i]);
    ft = LLVMFunctionType(ret, at, n, 0);
    f = LLVMAddFunction(g->m, name, ft);
  }
  if (LLVMCountParamTypes(ft) != n) {
    fail(g, "a run-time helper has an unexpected signature");
    return LLVMGetUndef(ret);
  }
  g->ncalls++;
  return LLVMBuildCall2(g->b, ft, f, args, n, "");
}

static LLVMValueRef
call1(kg *g, const char *name, LLVMTypeRef ret, LLVMValueRef a)
{
  return call(g, name, ret, &a, 1);
}

static LLVMValueRef
call2(kg *g, const char *name, LLVMTypeRef ret, LLVMValueRef a, LLVMValueRef b)
{
  LLVMValueRef v[2] = {a, b};
  return call(g, name, ret, v, 2);
}

static LLVMValueRef
intrinsic1(kg *g, const char *name, LLVMValueRef a)
{
  LLVMTypeRef t = LLVMTypeOf(a);
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->m, id, &t, 1);
  return LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->cx, id, &t, 1), f, &a, 1, "");
}

static LLVMValueRef
alloca_entry(kg *g, LLVMTypeRef t, const char *name)
{
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->cx);
  LLVMValueRef first = LLVMGetFirstInstruction(g->entry);
  if (first)
    LLVMPositionBuilderBefore(b, first);
  else
    LLVMPositionBuilderAtEnd(b, g->entry);
  LLVMValueRef a = LLVMBuildAlloca(b, t, name);
  LLVMDisposeBuilder(b);
  return a;
}

static LLVMValueRef
ci64(kg *g, int64_t v)
{
  return LLVMConstInt(g->i64, (unsigned long long)v, 1);
}

/* ---- index expressions ---- */

static LLVMValueRef
sym(kg *g, const coil_sym *s)
{
  switch (s->kind) {
  case COIL_SYM_CONST: return ci64(g, s->value);
  case COIL_SYM_VAR:
    if (s->var < 0 || s->var >= g->nvars || !g->var[s->var]) {
      fail(g, "an index uses a variable the kernel does not bind");
      return ci64(g, 0);
    }
    return g->var[s->var];
  default: break;
  }
  LLVMValueRef v = sym(g, s->args[0]);
  for (int i = 1; i < s->nargs; i++) {
    LLVMValueRef w = sym(g, s->args[i]);
    switch (s->kind) {
    case COIL_SYM_ADD: v = LLVMBuildAdd(g->b, v, w, ""); break;
    case COIL_SYM_MUL: v = LLVMBuildMul(g->b, v, w, ""); break;
    case COIL_SYM_MIN: v = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, v, w, ""), v, w, ""); break;
    case COIL_SYM_MAX: v = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, v, w, ""), v, w, ""); break;
    case COIL_SYM_FLOORDIV: case COIL_SYM_MOD: {
      int64_t alo, ahi, blo, bhi;
      coil_sym_bounds(g->p->sym, s->args[0], &alo, &ahi);
      coil_sym_bounds(g->p->sym, s->args[i], &blo, &bhi);
      bool div = s->kind == COIL_SYM_FLOORDIV;
      if (alo >= 0 && blo > 0) /* both sides non-negative: C's division is Python's */
        v = div ? LLVMBuildSDiv(g->b, v, w, "") : LLVMBuildSRem(g->b, v, w, "");
      else
        v = call2(g, div ? "coil_floordiv" : "coil_mod", g->i64, v, w);
      break;
    }
    default: fail(g, "an index expression of unknown kind"); break;
    }
  }
  return v;
}

/* ---- values ---- */

/* C's conversion of value v of dtype `from` to dtype `to`'s compute type (casts between
 * compute types; no rounding to f16/bf16). */
static LLVMValueRef
convert(kg *g, LLVMValueRef v, coil_dtype from, coil_dtype to)
{
  LLVMTypeRef ft = LLVMTypeOf(v), tt = ctype(g, to);
  if (ft == tt)
    return v;
  bool ff = coil_dtype_is_float(from), tf = coil_dtype_is_float(to);
  if (to == COIL_BOOL)
    return ff ? LLVMBuildFCmp(g->b, LLVMRealUNE, v, LLVMConstReal(ft, 0), "")
              : LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(ft, 0, 0), "");
  if (ff && tf)
    return LLVMBuildFPCast(g->b, v, tt, "");
  if (!ff && tf)
    return is_unsigned(from) ? LLVMBuildUIToFP(g->b, v, tt, "") : LLVMBuildSIToFP(g->b, v, tt, "");
  if (ff && !tf) /* saturating, NaN -> 0, as the C path's coil_f2i64 */
    return LLVMBuildTrunc(g->b, call1(g, "coil_f2i64", g->i64, LLVMBuildFPCast(g->b, v, g->f64, "")), tt, "");
  return LLVMBuildIntCast2(g->b, v, tt, !is_unsigned(from), "");
}

static LLVMValueRef
rounded(kg *g, coil_dtype t, LLVMValueRef v)
{
  if (t == COIL_F16 || t == COIL_BF16)
    return call1(g, t == COIL_F16 ? "coil_rnd_h" : "coil_rnd_b", g->f32, v);
  return v;
}

static const char *
math_name(coil_kop op, bool f32)
{
  if (f32)
    switch (op) { /* coil_cpu_math.h: branch-free, vectorisable */
    case COIL_KOP_EXP: return "coil_expf";
    case COIL_KOP_LOG: return "coil_logf";
    case COIL_KOP_LOG1P: return "coil_log1pf";
    case COIL_KOP_ERF: return "coil_erff";
    case COIL_KOP_TANH: return "coil_tanhf";
    case COIL_KOP_SIGMOID: return "coil_sigmoidf";
    case COIL_KOP_SIN: return "coil_sinf";
    case COIL_KOP_COS: return "coil_cosf";
    default: break;
    }
  switch (op) {
  case COIL_KOP_EXP: return f32 ? "expf" : "exp";
  case COIL_KOP_LOG: return f32 ? "logf" : "log";
  case COIL_KOP_LOG1P: return f32 ? "log1pf" : "log1p";
  case COIL_KOP_SIN: return f32 ? "sinf" : "sin";
  case COIL_KOP_COS: return f32 ? "cosf" : "cos";
  case COIL_KOP_TANH: return f32 ? "tanhf" : "tanh";
  case COIL_KOP_ERF: return f32 ? "erff" : "erf";
  case COIL_KOP_POW: return f32 ? "powf" : "pow";
  case COIL_KOP_SIGMOID: return f32 ? "coil_sigmoidf_ref" : "coil_sigmoid";
  case COIL_KOP_RSQRT: return f32 ? "coil_rsqrtf_ref" : "coil_rsqrt";
  case COIL_KOP_MAX: return f32 ? "coil_fmaxf" : "coil_fmax";
  case COIL_KOP_MIN: return f32 ? "coil_fminf" : "coil_fmin";
  case COIL_KOP_FLOORDIV: return f32 ? "coil_floordivf" : "coil_floordivd";
  case COIL_KOP_TAN: return f32 ? "tanf" : "tan";
  case COIL_KOP_SINH: return f32 ? "sinhf" : "sinh";
  case COIL_KOP_COSH: return f32 ? "coshf" : "cosh";
  case COIL_KOP_ASIN: return f32 ? "asinf" : "asin";
  case COIL_KOP_ACOS: return f32 ? "acosf" : "acos";
  case COIL_KOP_ATAN: return f32 ? "atanf" : "atan";
  case COIL_KOP_ASINH: return f32 ? "asinhf" : "asinh";
  case COIL_KOP_ACOSH: return f32 ? "acoshf" : "acosh";
  case COIL_KOP_ATANH: return f32 ? "atanhf" : "atanh";
  case COIL_KOP_EXPM1: return f32 ? "expm1f" : "expm1";
  case COIL_KOP_LOG2: return f32 ? "log2f" : "log2";
  case COIL_KOP_LOG10: return f32 ? "log10f" : "log10";
  case COIL_KOP_ATAN2: return f32 ? "atan2f" : "atan2";
  case COIL_KOP_FMOD: return f32 ? "fmodf" : "fmod";
  default: return NULL;
  }
}

/* a*b+c may fuse into one fma, as gcc's -ffp-contract=fast lets the C path's kernels */
static LLVMValueRef
contract(LLVMValueRef v)
{
  if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v))
    LLVMSetFastMathFlags(v, LLVMFastMathAllowContract);
  return v;
}

static LLVMValueRef
as_bool(kg *g, LLVMValueRef v, coil_dtype t)
{
  return t == COIL_BOOL ? v : convert(g, v, t, COIL_BOOL);
}

static LLVMValueRef
extend64(kg *g, LLVMValueRef v, coil_dtype t)
{
  return LLVMBuildIntCast2(g->b, v, g->i64, !is_unsigned(t), "");
}

/* The value of instruction i (not LOAD, STORE, INDEX, INDIRECT, REDUCE, SCAN). */
static LLVMValueRef
expr(kg *g, int i)
{
  const coil_kinst *in = &g->k->insts[i];
  coil_dtype t = in->dtype;
  LLVMTypeRef T = ctype(g, t);
  bool fl = coil_dtype_is_float(t), f32 = t != COIL_F64;
  coil_dtype at = in->args[0] >= 0 ? g->k->insts[in->args[0]].dtype : t;
  LLVMValueRef a = in->args[0] >= 0 ? g->val[in->args[0]] : NULL;
  LLVMValueRef c = coil_kop_arity(in->op) > 1 ? g->val[in->args[1]] : NULL;
  switch (coil_kop_class_of(in->op)) {
  case COIL_KCLASS_LEAF: /* CONST */
    if (fl)
      return LLVMConstReal(T, t == COIL_F64 ? in->f : (double)(float)in->f);
    return LLVMConstInt(T, (unsigned long long)in->i, 1);
  case COIL_KCLASS_CAST:
    return fl ? rounded(g, t, convert(g, a, at, t)) : convert(g, a, at, t);
  case COIL_KCLASS_SELECT:
    return LLVMBuildSelect(g->b, as_bool(g, a, at), c, g->val[in->args[2]], "");
  case COIL_KCLASS_CMP: {
    if (in->op == COIL_KOP_AND || in->op == COIL_KOP_OR) {
      LLVMValueRef x = as_bool(g, a, at), y = as_bool(g, c, at);
      return in->op == COIL_KOP_AND ? LLVMBuildAnd(g->b, x, y, "") : LLVMBuildOr(g->b, x, y, "");
    }
    if (coil_dtype_is_float(at)) {
      static const LLVMRealPredicate fp[] = {[COIL_KOP_EQ] = LLVMRealOEQ, [COIL_KOP_NE] = LLVMRealUNE,
                                             [COIL_KOP_LT] = LLVMRealOLT, [COIL_KOP_LE] = LLVMRealOLE,
                                             [COIL_KOP_GT] = LLVMRealOGT, [COIL_KOP_GE] = LLVMRealOGE};
      return LLVMBuildFCmp(g->b, fp[in->op], a, c, "");
    }
    bool u = is_unsigned(at);
    LLVMIntPredicate ip = in->op == COIL_KOP_EQ ? LLVMIntEQ : in->op == COIL_KOP_NE ? LLVMIntNE
                          : in->op == COIL_KOP_LT ? (u ? LLVMIntULT : LLVMIntSLT)
                          : in->op == COIL_KOP_LE ? (u ? LLVMIntULE : LLVMIntSLE)
                          : in->op == COIL_KOP_GT ? (u ? LLVMIntUGT : LLVMIntSGT)
                                                  : (u ? LLVMIntUGE : LLVMIntSGE);
    return LLVMBuildICmp(g->b, ip, a, c, "");
  }
  case COIL_KCLASS_UNARY:
    if (fl) {
      LLVMValueRef r;
      switch (in->op) {
      case COIL_KOP_NEG: r = LLVMBuildFNeg(g->b, a, ""); break;
      case COIL_KOP_RECIP: r = LLVMBuildFDiv(g->b, LLVMConstReal(T, 1), a, ""); break;
      case COIL_KOP_RELU: { /* NaN stays NaN */
        LLVMValueRef pos = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, a, LLVMConstReal(T, 0), ""), a,
                                           LLVMConstReal(T, 0), "");
        r = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealUNO, a, a, ""), a, pos, "");
        break;
      }
      case COIL_KOP_SQRT: r = intrinsic1(g, "llvm.sqrt", a); break;
      case COIL_KOP_FLOOR: r = intrinsic1(g, "llvm.floor", a); break;
      case COIL_KOP_CEIL: r = intrinsic1(g, "llvm.ceil", a); break;
      case COIL_KOP_TRUNC: r = intrinsic1(g, "llvm.trunc", a); break;
      case COIL_KOP_ROUND: r = intrinsic1(g, "llvm.rint", a); break; /* ties to even */
      case COIL_KOP_ABS: r = intrinsic1(g, "llvm.fabs", a); break;
      default: {
        const char *name = math_name(in->op, f32);
        if (!name) {
          fail(g, coil_kop_name(in->op));
          return LLVMGetUndef(T);
        }
        r = call1(g, name, T, a);
      }
      }
      return rounded(g, t, r);
    }
    switch (in->op) {
    case COIL_KOP_NEG: return LLVMBuildNeg(g->b, a, "");
    case COIL_KOP_ABS:
      return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, is_unsigned(t) ? LLVMIntULT : LLVMIntSLT, a, LLVMConstInt(T, 0, 0), ""),
                             LLVMBuildNeg(g->b, a, ""), a, "");
    case COIL_KOP_RELU:
      return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, is_unsigned(t) ? LLVMIntUGT : LLVMIntSGT, a, LLVMConstInt(T, 0, 0), ""),
                             a, LLVMConstInt(T, 0, 0), "");
    case COIL_KOP_BITNOT: return LLVMBuildNot(g->b, a, "");
    case COIL_KOP_NOT: return LLVMBuildNot(g->b, as_bool(g, a, at), "");
    default: return a; /* floor, ceil, round, trunc of an integer */
    }
  case COIL_KCLASS_BINARY:
    if (fl) {
      LLVMValueRef r;
      switch (in->op) {
      case COIL_KOP_ADD: r = contract(LLVMBuildFAdd(g->b, a, c, "")); break;
      case COIL_KOP_SUB: r = contract(LLVMBuildFSub(g->b, a, c, "")); break;
      case COIL_KOP_MUL: r = contract(LLVMBuildFMul(g->b, a, c, "")); break;
      case COIL_KOP_DIV: r = LLVMBuildFDiv(g->b, a, c, ""); break;
      case COIL_KOP_TRUNCDIV: r = intrinsic1(g, "llvm.trunc", LLVMBuildFDiv(g->b, a, c, "")); break;
      default: {
        const char *name = math_name(in->op, f32);
        if (!name) {
          fail(g, coil_kop_name(in->op));
          return LLVMGetUndef(T);
        }
        r = call2(g, name, T, a, c);
      }
      }
      return rounded(g, t, r);
    }
    switch (in->op) { /* integers wrap, as PyTorch's */
    case COIL_KOP_ADD: return LLVMBuildAdd(g->b, a, c, "");
    case COIL_KOP_SUB: return LLVMBuildSub(g->b, a, c, "");
    case COIL_KOP_MUL: return LLVMBuildMul(g->b, a, c, "");
    case COIL_KOP_BITAND: return LLVMBuildAnd(g->b, a, c, "");
    case COIL_KOP_BITOR: return LLVMBuildOr(g->b, a, c, "");
    case COIL_KOP_BITXOR: return LLVMBuildXor(g->b, a, c, "");
    case COIL_KOP_MAX: case COIL_KOP_MIN: {
      bool u = is_unsigned(t), mx = in->op == COIL_KOP_MAX;
      LLVMIntPredicate ip = mx ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT);
      return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, ip, a, c, ""), a, c, "");
    }
    case COIL_KOP_FLOORDIV: case COIL_KOP_DIV: case COIL_KOP_TRUNCDIV: case COIL_KOP_POW: case COIL_KOP_FMOD: {
      const char *name = in->op == COIL_KOP_FLOORDIV ? "coil_floordiv_i64" : in->op == COIL_KOP_POW ? "coil_ipow"
                         : in->op == COIL_KOP_FMOD ? "coil_fmod_i64" : "coil_truncdiv_i64";
      LLVMValueRef r = call2(g, name, g->i64, extend64(g, a, t), extend64(g, c, t));
      return LLVMBuildIntCast2(g->b, r, T, 0, "");
    }
    default: fail(g, coil_kop_name(in->op)); return LLVMGetUndef(T);
    }
  default:
    fail(g, coil_kop_name(in->op));
    return LLVMGetUndef(T);
  }
}

static LLVMValueRef
param_ptr(kg *g, int param)
{
  return g->param[param];
}

static LLVMValueRef
element(kg *g, const coil_kinst *in)
{
  coil_dtype st = g->k->params[in->param].dtype;
  LLVMValueRef base = param_ptr(g, in->param);
  return LLVMBuildGEP2(g->b, stype(g, st), base, (LLVMValueRef[]){sym(g, in->index)}, 1, "");
}

static LLVMValueRef
flat_r(kg *g)
{
  LLVMValueRef e = g->var[g->k->rvars[0]->var];
  for (int r = 1; r < g->k->nr; r++)
    e = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, e, sym(g, g->k->rsize[r]), ""), g->var[g->k->rvars[r]->var], "");
  return e;
}

/* Instruction i (not REDUCE, not SCAN): its value in g->val[i], or its store. */
static void
emit_inst(kg *g, int i)
{
  const coil_kinst *in = &g->k->insts[i];
  const coil_kernel *k = g->k;
  if (g->kept && g->kept[i]) {
    LLVMValueRef at = LLVMBuildGEP2(g->b, ctype(g, in->dtype), g->row[i], (LLVMValueRef[]){flat_r(g)}, 1, "");
    g->val[i] = LLVMBuildLoad2(g->b, ctype(g, in->dtype), at, "");
    return;
  }
  switch (in->op) {
  case COIL_KOP_LOAD: {
    coil_dtype st = k->params[in->param].dtype;
    LLVMValueRef v = LLVMBuildLoad2(g->b, stype(g, st), element(g, in), "");
    if (st == COIL_F16 || st == COIL_BF16)
      v = call1(g, st == COIL_F16 ? "coil_h2f" : "coil_b2f", g->f32, v);
    else if (st == COIL_BOOL)
      v = LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(g->i8, 0, 0), "");
    g->val[i] = v;
    return;
  }
  case COIL_KOP_STORE: {
    coil_dtype st = k->params[in->param].dtype;
    LLVMValueRef at = element(g, in), v = g->val[in->args[0]];
    if (in->mode != COIL_STORE_PLAIN) { /* an atomic read-modify-write of the run-time helpers */
      char name[64];
      snprintf(name, sizeof name, "coil_store_%s_%s", coil_store_mode_name(in->mode), coil_dtype_name(st));
      call2(g, name, g->vd, at, v);
      return;
    }
    if (st == COIL_F16 || st == COIL_BF16)
      v = call1(g, st == COIL_F16 ? "coil_f2h" : "coil_f2b", g->i16, v);
    else if (st == COIL_BOOL)
      v = LLVMBuildZExt(g->b, v, g->i8, "");
    LLVMBuildStore(g->b, v, at);
    return;
  }
  case COIL_KOP_INDEX:
    g->val[i] = sym(g, in->index);
    return;
  case COIL_KOP_INDIRECT: { /* in [0, bound), or 0 after recording the first bad value */
    coil_dtype at = k->insts[in->args[0]].dtype;
    LLVMValueRef v = coil_dtype_is_float(at) ? convert(g, g->val[in->args[0]], at, COIL_I64)
                                             : extend64(g, g->val[in->args[0]], at);
    LLVMValueRef bound = sym(g, in->index);
    LLVMValueRef bad = LLVMBuildOr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, v, ci64(g, 0), ""),
                                   LLVMBuildICmp(g->b, LLVMIntSGE, v, bound, ""), "");
    LLVMBasicBlockRef rec = LLVMAppendBasicBlockInContext(g->cx, g->fn, "oob");
    LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(g->cx, g->fn, "inrange");
    LLVMBuildCondBr(g->b, bad, rec, go);
    LLVMPositionBuilderAtEnd(g->b, rec);
    LLVMBuildAtomicCmpXchg(g->b, g->oob, ci64(g, INT64_MIN), v, LLVMAtomicOrderingMonotonic,
                           LLVMAtomicOrderingMonotonic, 0);
    LLVMBuildBr(g->b, go);
    LLVMPositionBuilderAtEnd(g->b, go);
    LLVMValueRef r = LLVMBuildSelect(g->b, bad, ci64(g, 0), v, "");
    g->val[i] = r;
    if (g->indvar[i] >= 0)
      g->var[g->indvar[i]] = r;
    return;
  }
  default:
    g->val[i] = expr(g, i);
    return;
  }
}

/* ---- loops ---- */

typedef struct {
  LLVMValueRef slot;
  LLVMBasicBlockRef head, body, exit;
  int ncalls;                /* g->ncalls when the loop opened */
} loop;

/* Tags each load and store of block b with the access group. */
static void
tag_block(kg *g, LLVMBasicBlockRef b)
{
  unsigned kind = LLVMGetMDKindIDInContext(g->cx, "llvm.access.group", 17);
  for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in))
    if (LLVMIsALoadInst(in) || LLVMIsAStoreInst(in))
      LLVMSetMetadata(in, kind, LLVMMetadataAsValue(g->cx, g->group));
}

/* for (v = from; v < to; v++): leaves the builder in the body; *var receives v's value there */
static loop
loop_open(kg *g, LLVMValueRef from, LLVMValueRef to, const char *name, LLVMValueRef *var)
{
  loop l;
  l.slot = alloca_entry(g, g->i64, name);
  LLVMBuildStore(g->b, from, l.slot);
  l.head = LLVMAppendBasicBlockInContext(g->cx, g->fn, "head");
  l.body = LLVMAppendBasicBlockInContext(g->cx, g->fn, "body");
  l.exit = LLVMAppendBasicBlockInContext(g->cx, g->fn, "exit");
  LLVMBuildBr(g->b, l.head);
  LLVMPositionBuilderAtEnd(g->b, l.head);
  LLVMValueRef v = LLVMBuildLoad2(g->b, g->i64, l.slot, name);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, v, to, ""), l.body, l.exit);
  LLVMPositionBuilderAtEnd(g->b, l.body);
  l.ncalls = g->ncalls;
  *var = v;
  return l;
}

/* vectorise: the loop's llvm.loop.vectorize.enable, where the C path says `omp simd` (which
 * also lets a float reduction be reordered across lanes, as this hint does) */
static void
loop_close_vec(kg *g, loop *l, int64_t step, bool vectorise)
{
  LLVMValueRef v = LLVMBuildLoad2(g->b, g->i64, l->slot, "");
  LLVMBuildStore(g->b, LLVMBuildAdd(g->b, v, ci64(g, step), ""), l->slot);
  LLVMValueRef br = LLVMBuildBr(g->b, l->head);
  if (vectorise) {
    /* `omp simd` says the iterations carry no dependence through memory: the loop's loads and
     * stores join an access group the loop declares parallel, so the vectoriser needs no
     * run-time overlap checks (and no second, scalar copy of the loop for when they fail) */
    tag_block(g, l->head);
    tag_block(g, l->body);
    for (LLVMBasicBlockRef b = LLVMGetNextBasicBlock(l->exit); b; b = LLVMGetNextBasicBlock(b))
      tag_block(g, b);
    LLVMMetadataRef self = LLVMTemporaryMDNode(g->cx, NULL, 0);
    LLVMMetadataRef hint[2] = {LLVMMDStringInContext2(g->cx, "llvm.loop.vectorize.enable", 26),
                               LLVMValueAsMetadata(LLVMConstInt(g->i1, 1, 0))};
    LLVMMetadataRef par[2] = {LLVMMDStringInContext2(g->cx, "llvm.loop.parallel_accesses", 27), g->group};
    /* a loop that calls exp, erf, ... is interleaved twice: two independent chains hide the
     * math's latency (gelu: 0.9-1.07x gcc's time, against 1.3-1.6 with one chain), and each
     * further copy of the inlined math is code the instruction selector and the register
     * allocator pay for (softmax: 19 ms of code generation at LLVM's four, 13 at one). Any other
     * loop streams from memory, and is not interleaved: a row sum of 4096 x 4096 f32 on one
     * thread ran 0.98-0.99x gcc's time with one AVX-512 accumulator, 1.06-1.11x with two and
     * 1.12-1.15x with four (coil bench, runs paired on the same inputs, AMD Zen 4 VM,
     * 2026-12-02); gcc makes one */
    LLVMMetadataRef twice[2] = {LLVMMDStringInContext2(g->cx, "llvm.loop.interleave.count", 26),
                               LLVMValueAsMetadata(LLVMConstInt(g->i32, g->ncalls > l->ncalls ? 2 : 1, 0))};
    /* (no llvm.loop.vectorize.predicate.enable: a masked loop instead of a remainder compiles in
     * two thirds of the time but ran gelu 1.5x slower on AVX2) */
    LLVMMetadataRef ops[4] = {self, LLVMMDNodeInContext2(g->cx, hint, 2), NULL, NULL};
    int nops = 2;
    if (g->group)
      ops[nops++] = LLVMMDNodeInContext2(g->cx, par, 2);
    ops[nops++] = LLVMMDNodeInContext2(g->cx, twice, 2);
    LLVMMetadataRef node = LLVMMDNodeInContext2(g->cx, ops, (size_t)nops);
    LLVMMetadataReplaceAllUsesWith(self, node);
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(g->cx, "llvm.loop", 9), LLVMMetadataAsValue(g->cx, node));
  }
  LLVMPositionBuilderAtEnd(g->b, l->exit);
}

static void
loop_close(kg *g, loop *l, int64_t step)
{
  loop_close_vec(g, l, step, false);
}

static void
r_open(kg *g, loop *ls)
{
  for (int r = 0; r < g->k->nr; r++)
    ls[r] = loop_open(g, ci64(g, 0), sym(g, g->k->rsize[r]), "r", &g->var[g->k->rvars[r]->var]);
}

static void
r_close(kg *g, loop *ls, bool vectorise)
{
  for (int r = g->k->nr - 1; r >= 0; r--)
    loop_close_vec(g, &ls[r], 1, vectorise && r == g->k->nr - 1);
}

/* ---- reductions (the C path's plan: see cpu_codegen.c) ---- */

static void
mark_cone(const kg *g, int i, bool *cone)
{
  if (i < 0 || cone[i] || !g->per_r[i])
    return;
  cone[i] = true;
  if (g->kept[i])
    return;
  const coil_kinst *in = &g->k->insts[i];
  for (int a = 0; a < coil_kop_arity(in->op); a++)
    mark_cone(g, in->args[a], cone);
  int deps[8], nd = coil_kinst_indirect_deps(g->p, g->k, i, deps, 8);
  for (int d = 0; d < nd; d++)
    mark_cone(g, deps[d], cone);
}

static void
plan_cone(kg *g, int i, bool *cone, bool *keep)
{
  const coil_kinst *in = &g->k->insts[i];
  mark_cone(g, in->args[0], cone);
  for (int j = 0; j < g->k->ninsts && g->nrow; j++) {
    coil_kop op = g->k->insts[j].op;
    if (!cone[j] || g->kept[j] || op == COIL_KOP_LOAD || op == COIL_KOP_INDEX || op == COIL_KOP_INDIRECT)
      continue;
    bool later = false;
    for (int q = i + 1; q < g->k->ninsts && !later; q++) {
      if (g->done[q])
        continue;
      for (int a = 0; a < coil_kop_arity(g->k->insts[q].op); a++)
        later = later || g->k->insts[q].args[a] == j;
    }
    int64_t bytes = g->nrow * (int64_t)sizeof(double);
    if (later && g->row_bytes + bytes <= ROW_BYTES_MAX) {
      g->row_bytes += bytes;
      keep[j] = true;
      g->row[j] = alloca_entry(g, LLVMArrayType2(ctype(g, g->k->insts[j].dtype), (uint64_t)g->nrow), "row");
    }
  }
}

static void
emit_cone(kg *g, const bool *cone, const bool *keep)
{
  for (int j = 0; j < g->k->ninsts; j++)
    if (cone[j])
      emit_inst(g, j);
  for (int j = 0; j < g->k->ninsts; j++)
    if (keep[j]) {
      LLVMValueRef at = LLVMBuildGEP2(g->b, ctype(g, g->k->insts[j].dtype), g->row[j], (LLVMValueRef[]){flat_r(g)}, 1, "");
      LLVMBuildStore(g->b, g->val[j], at);
    }
}

static void
rows_filled(kg *g, const bool *keep)
{
  for (int j = 0; j < g->k->ninsts; j++)
    g->kept[j] = g->kept[j] || keep[j];
}

static bool
is_welford(coil_reduction r)
{
  return r == COIL_REDUCE_WELFORD_MEAN || r == COIL_REDUCE_WELFORD_M2;
}

static LLVMValueRef
ld(kg *g, LLVMTypeRef t, LLVMValueRef p)
{
  return LLVMBuildLoad2(g->b, t, p, "");
}

static LLVMValueRef
lane(kg *g, LLVMTypeRef t, LLVMValueRef arr, LLVMValueRef l)
{
  return LLVMBuildGEP2(g->b, t, arr, (LLVMValueRef[]){l}, 1, "");
}

/* Welford in WELFORD_LANES lanes over chunks of the innermost r range, a scalar tail, Chan's
 * combine: the C path's emit_welford, one thread per x point. */
static void
emit_welford(kg *g, int i)
{
  const coil_kernel *k = g->k;
  int nr = k->nr, a = k->insts[i].args[0];
  bool dbl = k->insts[a].dtype == COIL_F64;
  LLVMTypeRef T = dbl ? g->f64 : g->f32;
  LLVMValueRef zero = LLVMConstReal(T, 0), one = LLVMConstReal(T, 1);
  for (int j = i; j < k->ninsts; j++)
    if (k->insts[j].op == COIL_KOP_REDUCE && is_welford(k->insts[j].red) && k->insts[j].args[0] == a)
      g->done[j] = true;
  bool *cone = calloc((size_t)k->ninsts + 1, sizeof(bool));
  bool *keep = calloc((size_t)k->ninsts + 1, sizeof(bool));
  plan_cone(g, i, cone, keep);
  LLVMTypeRef lanes = LLVMArrayType2(T, WELFORD_LANES);
  LLVMValueRef M = alloca_entry(g, T, "wM"), Q = alloca_entry(g, T, "wQ"), N = alloca_entry(g, g->i64, "wN");
  LLVMValueRef m = alloca_entry(g, lanes, "wm"), q = alloca_entry(g, lanes, "wq");
  LLVMValueRef tm = alloca_entry(g, T, "wtm"), tq = alloca_entry(g, T, "wtq");
  LLVMValueRef cnt = alloca_entry(g, g->i64, "wc"), tn = alloca_entry(g, g->i64, "wtn");
  LLVMBuildStore(g->b, zero, M);
  LLVMBuildStore(g->b, zero, Q);
  LLVMBuildStore(g->b, ci64(g, 0), N);
  LLVMBuildStore(g->b, zero, tm);
  LLVMBuildStore(g->b, zero, tq);
  LLVMBuildStore(g->b, ci64(g, 0), cnt);
  LLVMBuildStore(g->b, ci64(g, 0), tn);
  /* the lanes are registers through the chunk loop: stored whole here, read at constant places
   * once the vectoriser's 2 or 4 lane vectors are unrolled (PIPELINE), copied whole for the
   * combine's loop below, so SROA promotes them (a lane array in memory cost layer_norm a
   * store-to-load round trip each chunk: 1.15-1.25x gcc's time) */
  LLVMBuildStore(g->b, LLVMConstNull(lanes), m);
  LLVMBuildStore(g->b, LLVMConstNull(lanes), q);
  loop outer[COIL_MAX_LOOP_DIMS];
  for (int r = 0; r < nr - 1; r++)
    outer[r] = loop_open(g, ci64(g, 0), sym(g, k->rsize[r]), "r", &g->var[k->rvars[r]->var]);
  LLVMValueRef rsz = sym(g, k->rsize[nr - 1]);
  LLVMValueRef end = LLVMBuildMul(g->b, LLVMBuildSDiv(g->b, rsz, ci64(g, WELFORD_LANES), ""), ci64(g, WELFORD_LANES), "");
  LLVMValueRef c0;
  loop chunk = loop_open(g, ci64(g, 0), end, "chunk", &c0);
  LLVMValueRef cn = LLVMBuildAdd(g->b, ld(g, g->i64, cnt), ci64(g, 1), "");
  LLVMBuildStore(g->b, cn, cnt);
  LLVMValueRef w = LLVMBuildFDiv(g->b, one, LLVMBuildSIToFP(g->b, cn, T, ""), "");
  LLVMValueRef rl;
  loop in = loop_open(g, c0, LLVMBuildAdd(g->b, c0, ci64(g, WELFORD_LANES), ""), "rl", &rl);
  g->var[k->rvars[nr - 1]->var] = rl;
  emit_cone(g, cone, keep);
  LLVMValueRef x = g->val[a], li = LLVMBuildSub(g->b, rl, c0, "");
  LLVMValueRef mp = lane(g, T, m, li), qp = lane(g, T, q, li);
  LLVMValueRef dl = LLVMBuildFSub(g->b, x, ld(g, T, mp), "");
  LLVMValueRef mn = LLVMBuildFAdd(g->b, ld(g, T, mp), LLVMBuildFMul(g->b, dl, w, ""), "");
  LLVMBuildStore(g->b, mn, mp);
  LLVMBuildStore(g->b, LLVMBuildFAdd(g->b, ld(g, T, qp), LLVMBuildFMul(g->b, dl, LLVMBuildFSub(g->b, x, mn, ""), ""), ""), qp);
  loop_close_vec(g, &in, 1, true);
  loop_close(g, &chunk, WELFORD_LANES);
  LLVMValueRef rt;
  loop tail = loop_open(g, end, rsz, "rt", &rt);
  g->var[k->rvars[nr - 1]->var] = rt;
  emit_cone(g, cone, keep);
  x = g->val[a];
  LLVMValueRef n1 = LLVMBuildAdd(g->b, ld(g, g->i64, tn), ci64(g, 1), "");
  LLVMBuildStore(g->b, n1, tn);
  dl = LLVMBuildFSub(g->b, x, ld(g, T, tm), "");
  mn = LLVMBuildFAdd(g->b, ld(g, T, tm), LLVMBuildFDiv(g->b, dl, LLVMBuildSIToFP(g->b, n1, T, ""), ""), "");
  LLVMBuildStore(g->b, mn, tm);
  LLVMBuildStore(g->b, LLVMBuildFAdd(g->b, ld(g, T, tq), LLVMBuildFMul(g->b, dl, LLVMBuildFSub(g->b, x, mn, ""), ""), ""), tq);
  loop_close(g, &tail, 1);
  for (int r = nr - 2; r >= 0; r--)
    loop_close(g, &outer[r], 1);
  LLVMValueRef m_out = alloca_entry(g, lanes, "wm.out"), q_out = alloca_entry(g, lanes, "wq.out");
  LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, lanes, m, ""), m_out);
  LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, lanes, q, ""), q_out);
  const char *combine = dbl ? "coil_welford_d" : "coil_welford_f";
  LLVMValueRef l;
  loop cl = loop_open(g, ci64(g, 0), ci64(g, WELFORD_LANES), "l", &l);
  call(g, combine, g->vd,
       (LLVMValueRef[]){M, Q, N, ld(g, T, lane(g, T, m_out, l)), ld(g, T, lane(g, T, q_out, l)), ld(g, g->i64, cnt)}, 6);
  loop_close(g, &cl, 1);
  call(g, combine, g->vd, (LLVMValueRef[]){M, Q, N, ld(g, T, tm), ld(g, T, tq), ld(g, g->i64, tn)}, 6);
  rows_filled(g, keep);
  free(keep);
  free(cone);
  LLVMValueRef Mv = ld(g, T, M), Qv = ld(g, T, Q), Nv = ld(g, g->i64, N);
  for (int j = i; j < k->ninsts; j++)
    if (g->done[j] && k->insts[j].op == COIL_KOP_REDUCE && is_welford(k->insts[j].red) && k->insts[j].args[0] == a)
      g->val[j] = k->insts[j].red == COIL_REDUCE_WELFORD_M2
                      ? Qv
                      : LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntNE, Nv, ci64(g, 0), ""), Mv, LLVMConstReal(T, NAN), "");
}

static LLVMValueRef
extreme(kg *g, coil_dtype t, bool smallest)
{
  LLVMTypeRef T = ctype(g, t);
  if (coil_dtype_is_float(t))
    return LLVMConstReal(T, smallest ? -INFINITY : INFINITY);
  switch (t) {
  case COIL_I64: return ci64(g, smallest ? INT64_MIN : INT64_MAX);
  case COIL_I32: return LLVMConstInt(T, (unsigned long long)(smallest ? INT32_MIN : INT32_MAX), 1);
  case COIL_I16: return LLVMConstInt(T, (unsigned long long)(smallest ? INT16_MIN : INT16_MAX), 1);
  case COIL_I8: return LLVMConstInt(T, (unsigned long long)(smallest ? INT8_MIN : INT8_MAX), 1);
  case COIL_U8: return LLVMConstInt(T, smallest ? 0 : 255, 0);
  default: return LLVMConstInt(T, smallest ? 0 : 1, 0);
  }
}

static void
emit_reduce(kg *g, int i)
{
  const coil_kinst *in = &g->k->insts[i];
  coil_dtype st = g->k->insts[in->args[0]].dtype;
  coil_reduction red = in->red;
  if (is_welford(red)) {
    emit_welford(g, i);
    return;
  }
  bool arg = red == COIL_REDUCE_ARGMAX || red == COIL_REDUCE_ARGMIN;
  bool minmax = red == COIL_REDUCE_MAX || red == COIL_REDUCE_MIN, fl = coil_dtype_is_float(st);
  coil_dtype accd = arg || minmax ? st : red == COIL_REDUCE_ANY ? COIL_BOOL : in->dtype;
  LLVMTypeRef AT = ctype(g, accd);
  LLVMValueRef acc = alloca_entry(g, AT, "acc"), idx = NULL, sawnan = NULL;
  LLVMValueRef init;
  switch (red) {
  case COIL_REDUCE_SUM: init = coil_dtype_is_float(accd) ? LLVMConstReal(AT, 0) : LLVMConstInt(AT, 0, 0); break;
  case COIL_REDUCE_PROD: init = coil_dtype_is_float(accd) ? LLVMConstReal(AT, 1) : LLVMConstInt(AT, 1, 0); break;
  case COIL_REDUCE_ANY: init = LLVMConstInt(g->i1, 0, 0); break;
  default: init = extreme(g, st, red == COIL_REDUCE_MAX || red == COIL_REDUCE_ARGMAX); break;
  }
  LLVMBuildStore(g->b, init, acc);
  if (arg) {
    idx = alloca_entry(g, g->i64, "idx");
    LLVMBuildStore(g->b, ci64(g, 0), idx);
  }
  if (minmax && fl) {
    sawnan = alloca_entry(g, g->i1, "nan");
    LLVMBuildStore(g->b, LLVMConstInt(g->i1, 0, 0), sawnan);
  }
  bool *cone = calloc((size_t)g->k->ninsts + 1, sizeof(bool));
  bool *keep = calloc((size_t)g->k->ninsts + 1, sizeof(bool));
  plan_cone(g, i, cone, keep);
  loop ls[COIL_MAX_LOOP_DIMS];
  r_open(g, ls);
  emit_cone(g, cone, keep);
  rows_filled(g, keep);
  free(keep);
  free(cone);
  LLVMValueRef v = g->val[in->args[0]], a = ld(g, AT, acc);
  switch (red) {
  case COIL_REDUCE_SUM: case COIL_REDUCE_PROD: {
    LLVMValueRef x = convert(g, v, st, accd);
    bool f = coil_dtype_is_float(accd), sum = red == COIL_REDUCE_SUM;
    LLVMBuildStore(g->b, f ? (sum ? LLVMBuildFAdd(g->b, a, x, "") : LLVMBuildFMul(g->b, a, x, ""))
                           : (sum ? LLVMBuildAdd(g->b, a, x, "") : LLVMBuildMul(g->b, a, x, "")), acc);
    break;
  }
  case COIL_REDUCE_ANY:
    LLVMBuildStore(g->b, LLVMBuildOr(g->b, a, as_bool(g, v, st), ""), acc);
    break;
  case COIL_REDUCE_MAX: case COIL_REDUCE_MIN: {
    bool mx = red == COIL_REDUCE_MAX;
    if (fl) {
      /* nnan nsz on the compare and select: what LLVM's vectoriser asks of a float max/min
       * reduction. A NaN makes the accumulator poison, never read: the flag, computed
       * without them, selects NaN over it after the loop */
      LLVMValueRef better = LLVMBuildFCmp(g->b, mx ? LLVMRealOGT : LLVMRealOLT, v, a, "");
      LLVMValueRef r = LLVMBuildSelect(g->b, better, v, a, "");
      LLVMSetFastMathFlags(better, LLVMFastMathNoNaNs | LLVMFastMathNoSignedZeros);
      LLVMSetFastMathFlags(r, LLVMFastMathNoNaNs | LLVMFastMathNoSignedZeros);
      LLVMBuildStore(g->b, r, acc);
    } else {
      LLVMValueRef better = LLVMBuildICmp(g->b, mx ? (is_unsigned(st) ? LLVMIntUGT : LLVMIntSGT)
                                                   : (is_unsigned(st) ? LLVMIntULT : LLVMIntSLT), v, a, "");
      LLVMBuildStore(g->b, LLVMBuildSelect(g->b, better, v, a, ""), acc);
    }
    if (fl)
      LLVMBuildStore(g->b, LLVMBuildOr(g->b, ld(g, g->i1, sawnan), LLVMBuildFCmp(g->b, LLVMRealUNO, v, v, ""), ""), sawnan);
    break;
  }
  case COIL_REDUCE_ARGMAX: case COIL_REDUCE_ARGMIN: {
    bool mx = red == COIL_REDUCE_ARGMAX;
    LLVMValueRef better;
    if (fl) /* the first NaN wins and stays */
      better = LLVMBuildAnd(g->b, LLVMBuildFCmp(g->b, LLVMRealOEQ, a, a, ""),
                            LLVMBuildOr(g->b, LLVMBuildFCmp(g->b, LLVMRealUNO, v, v, ""),
                                        LLVMBuildFCmp(g->b, mx ? LLVMRealOGT : LLVMRealOLT, v, a, ""), ""), "");
    else
      better = LLVMBuildICmp(g->b, mx ? (is_unsigned(st) ? LLVMIntUGT : LLVMIntSGT)
                                      : (is_unsigned(st) ? LLVMIntULT : LLVMIntSLT), v, a, "");
    LLVMBuildStore(g->b, LLVMBuildSelect(g->b, better, v, a, ""), acc);
    LLVMBuildStore(g->b, LLVMBuildSelect(g->b, better, flat_r(g), ld(g, g->i64, idx), ""), idx);
    break;
  }
  default: fail(g, "an unknown reduction"); break;
  }
  r_close(g, ls, !arg); /* the C path: `omp simd reduction(...)` but for argmax/argmin */
  LLVMValueRef r = arg ? ld(g, g->i64, idx) : ld(g, AT, acc);
  if (minmax && fl)
    r = LLVMBuildSelect(g->b, ld(g, g->i1, sawnan), LLVMConstReal(AT, NAN), r, "");
  g->val[i] = arg ? r : convert(g, r, accd, in->dtype);
}

/* ---- the kernel ---- */

static LLVMValueRef
scan_identity(kg *g, coil_dtype t, coil_reduction red)
{
  LLVMTypeRef T = ctype(g, t);
  bool fl = coil_dtype_is_float(t);
  if (red == COIL_REDUCE_SUM || red == COIL_REDUCE_PROD)
    return fl ? LLVMConstReal(T, red == COIL_REDUCE_SUM ? 0 : 1) : LLVMConstInt(T, red == COIL_REDUCE_SUM ? 0 : 1, 0);
  return extreme(g, t, red == COIL_REDUCE_MAX);
}

static LLVMValueRef
scan_combine(kg *g, coil_dtype t, coil_reduction red, LLVMValueRef a, LLVMValueRef v)
{
  bool fl = coil_dtype_is_float(t);
  switch (red) {
  case COIL_REDUCE_SUM: return fl ? LLVMBuildFAdd(g->b, a, v, "") : LLVMBuildAdd(g->b, a, v, "");
  case COIL_REDUCE_PROD: return fl ? LLVMBuildFMul(g->b, a, v, "") : LLVMBuildMul(g->b, a, v, "");
  default: break;
  }
  bool mx = red == COIL_REDUCE_MAX;
  if (fl)
    return call2(g, t == COIL_F64 ? (mx ? "coil_fmax" : "coil_fmin") : (mx ? "coil_fmaxf" : "coil_fminf"),
                 ctype(g, t), a, v);
  LLVMIntPredicate ip = mx ? (is_unsigned(t) ? LLVMIntUGT : LLVMIntSGT) : (is_unsigned(t) ? LLVMIntULT : LLVMIntSLT);
  return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, ip, a, v, ""), a, v, "");
}

/* The body of one x point. */
static void
emit_point(kg *g)
{
  const coil_kernel *k = g->k;
  bool any_per_r_store = false;
  for (int i = 0; i < k->ninsts && !g->failed; i++) {
    const coil_kinst *in = &k->insts[i];
    if (in->op == COIL_KOP_REDUCE) {
      if (!g->done[i])
        emit_reduce(g, i);
    } else if (in->op == COIL_KOP_STORE && g->per_r[i]) {
      any_per_r_store = true;
    } else if (!g->per_r[i]) {
      emit_inst(g, i);
    }
  }
  if (!any_per_r_store || g->failed)
    return;
  bool *cone = calloc((size_t)k->ninsts + 1, sizeof(bool));
  LLVMValueRef *acc = calloc((size_t)k->ninsts + 1, sizeof(LLVMValueRef));
  for (int i = 0; i < k->ninsts; i++)
    if (k->insts[i].op == COIL_KOP_STORE && g->per_r[i])
      mark_cone(g, k->insts[i].args[0], cone);
  for (int i = 0; i < k->ninsts; i++)
    if (cone[i] && k->insts[i].op == COIL_KOP_SCAN) {
      acc[i] = alloca_entry(g, ctype(g, k->insts[i].dtype), "scan");
      LLVMBuildStore(g->b, scan_identity(g, k->insts[i].dtype, k->insts[i].red), acc[i]);
    }
  loop ls[COIL_MAX_LOOP_DIMS];
  r_open(g, ls);
  for (int i = 0; i < k->ninsts; i++) {
    if (!(cone[i] || (k->insts[i].op == COIL_KOP_STORE && g->per_r[i])))
      continue;
    if (k->insts[i].op == COIL_KOP_SCAN) {
      LLVMValueRef v = scan_combine(g, k->insts[i].dtype, k->insts[i].red, ld(g, ctype(g, k->insts[i].dtype), acc[i]),
                                    g->val[k->insts[i].args[0]]);
      LLVMBuildStore(g->b, v, acc[i]);
      g->val[i] = v;
    } else {
      emit_inst(g, i);
    }
  }
  bool scan = false;
  for (int i = 0; i < k->ninsts; i++)
    scan = scan || acc[i];
  r_close(g, ls, !scan); /* scans run in order */
  free(acc);
  free(cone);
}

/* The kernel function: rows of the flattened x range [lo, hi), each row's x digits by
 * division, then the innermost x loop. */
static void
emit_kernel(kg *g, const char *tag)
{
  const coil_kernel *k = g->k;
  char name[512];
  snprintf(name, sizeof name, "%s_%s", k->name, tag);
  LLVMTypeRef params[5] = {g->ptr, g->ptr, g->ptr, g->i64, g->i64};
  g->fn = LLVMAddFunction(g->m, name, LLVMFunctionType(g->vd, params, 5, 0));
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  LLVMAddAttributeAtIndex(g->fn, 3, LLVMCreateEnumAttribute(g->cx, noalias, 0)); /* oob: its own */
  g->bufs = LLVMGetParam(g->fn, 0);
  g->symv = LLVMGetParam(g->fn, 1);
  g->oob = LLVMGetParam(g->fn, 2);
  LLVMValueRef lo = LLVMGetParam(g->fn, 3), hi = LLVMGetParam(g->fn, 4);
  g->entry = LLVMAppendBasicBlockInContext(g->cx, g->fn, "entry");
  LLVMPositionBuilderAtEnd(g->b, g->entry);
  for (int i = 0; i < k->nparams; i++) { /* once: a store through one could alias bufs itself */
    LLVMValueRef slot = LLVMBuildGEP2(g->b, g->ptr, g->bufs, (LLVMValueRef[]){ci64(g, i)}, 1, "");
    g->param[i] = LLVMBuildLoad2(g->b, g->ptr, slot, k->params[i].name);
  }
  for (int s = 0; s < k->nsyms; s++) { /* the size symbols it uses, from symv */
    int v = k->syms[s]->kind == COIL_SYM_VAR ? k->syms[s]->var : -1;
    if (v < 0 || v >= g->nvars) {
      fail(g, "a size symbol that is not a variable");
      return;
    }
    LLVMValueRef at = LLVMBuildGEP2(g->b, g->i64, g->symv, (LLVMValueRef[]){ci64(g, v)}, 1, "");
    g->var[v] = LLVMBuildLoad2(g->b, g->i64, at, coil_sym_var_name(g->p->sym, v));
  }
  if (k->nx == 0) {
    LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(g->cx, g->fn, "point");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->cx, g->fn, "done");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, lo, hi, ""), run, done);
    LLVMPositionBuilderAtEnd(g->b, run);
    emit_point(g);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
    LLVMBuildRetVoid(g->b);
    return;
  }
  LLVMValueRef size[COIL_MAX_LOOP_DIMS];
  for (int i = 0; i < k->nx; i++)
    size[i] = sym(g, k->xsize[i]);
  LLVMValueRef f;
  loop rows = loop_open(g, lo, hi, "f", &f);
  int last = k->nx - 1;
  LLVMValueRef rest = f, first = NULL;
  for (int i = last; i >= 0; i--) {
    LLVMValueRef digit = i > 0 ? LLVMBuildSRem(g->b, rest, size[i], "") : rest;
    if (i > 0)
      rest = LLVMBuildSDiv(g->b, rest, size[i], "");
    if (i == last)
      first = digit;
    else
      g->var[k->xvars[i]->var] = digit;
  }
  /* with two x ranges or more, [lo, hi) is whole rows (cpu_walk.c splits so): the innermost loop
   * runs over all of its range, and where that is a constant multiple of the vector width the
   * vectoriser leaves no scalar remainder (half the code of a math-heavy kernel, and so half its
   * code generation) */
  LLVMValueRef n;
  if (last > 0) {
    first = ci64(g, 0);
    n = size[last];
  } else {
    LLVMValueRef left = LLVMBuildSub(g->b, size[last], first, ""), avail = LLVMBuildSub(g->b, hi, f, "");
    n = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, left, avail, ""), left, avail, "");
  }
  loop inner = loop_open(g, first, LLVMBuildAdd(g->b, first, n, ""), "x", &g->var[k->xvars[last]->var]);
  emit_point(g);
  /* pointwise: the innermost x loop is the C path's `omp simd` (not with combining stores:
   * points storing to one element are no independent lanes) */
  loop_close_vec(g, &inner, 1, k->nr == 0 && !coil_kernel_has_combining_store(k));
  LLVMBuildStore(g->b, LLVMBuildAdd(g->b, f, n, ""), rows.slot);
  LLVMBuildBr(g->b, rows.head);
  LLVMPositionBuilderAtEnd(g->b, rows.exit);
  LLVMBuildRetVoid(g->b);
}

/* ---- the module ---- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static LLVMOrcLLJITRef jit;
static char jit_error[512];
static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;

static void
take_error(LLVMErrorRef e, char *out, size_t size)
{
  char *m = LLVMGetErrorMessage(e);
  snprintf(out, size, "%s", m);
  LLVMDisposeErrorMessage(m);
}

static void
report_session_error(void *ctx, LLVMErrorRef e)
{
  (void)ctx;
  char m[512];
  take_error(e, m, sizeof m); /* its lookup's own error says the same; never to stderr */
}

static pthread_once_t targets_once = PTHREAD_ONCE_INIT;

static void
init_targets(void)
{
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
}

/* the JIT, for load: a compile needs only the targets (the worker process never starts it) */
static void
init(void)
{
  pthread_once(&targets_once, init_targets);
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&jit, NULL);
  if (e) {
    take_error(e, jit_error, sizeof jit_error);
    jit = NULL;
    return;
  }
  LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(jit), report_session_error, NULL);
}

static void
diagnostic(LLVMDiagnosticInfoRef di, void *ctx)
{
  coil_strbuf *log = ctx;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || log->len > 4000)
    return;
  char *m = LLVMGetDiagInfoDescription(di);
  coil_strbuf_printf(log, "%s%s", log->len ? "; " : "", m);
  LLVMDisposeMessage(m);
}

static void
target(bool portable, char *out, size_t size)
{
  char *triple = LLVMGetDefaultTargetTriple();
  char *cpu = portable ? NULL : LLVMGetHostCPUName(), *feat = portable ? NULL : LLVMGetHostCPUFeatures();
  snprintf(out, size, "%s %s %s", triple, cpu ? cpu : "generic", feat ? feat : "");
  LLVMDisposeMessage(triple);
  if (cpu)
    LLVMDisposeMessage(cpu);
  if (feat)
    LLVMDisposeMessage(feat);
}

/* Target machines kept for the next compile, host and portable apart: building one costs a
 * millisecond (its subtarget's tables), a tenth of a small kernel's code generation. A compile
 * takes one (or builds one) and puts it back; compiles on other threads get their own. */
enum { POOL_MAX = 8 };
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static LLVMTargetMachineRef pool[2][POOL_MAX];
static int npool[2];

static LLVMTargetMachineRef machine(bool portable, char *why, size_t size);

static LLVMTargetMachineRef
take_machine(bool portable, char *why, size_t size)
{
  LLVMTargetMachineRef tm = NULL;
  pthread_mutex_lock(&pool_lock);
  if (npool[portable] > 0)
    tm = pool[portable][--npool[portable]];
  pthread_mutex_unlock(&pool_lock);
  return tm ? tm : machine(portable, why, size);
}

static void
give_machine(bool portable, LLVMTargetMachineRef tm)
{
  pthread_mutex_lock(&pool_lock);
  if (npool[portable] < POOL_MAX) {
    pool[portable][npool[portable]++] = tm;
    tm = NULL;
  }
  pthread_mutex_unlock(&pool_lock);
  if (tm)
    LLVMDisposeTargetMachine(tm);
}

static LLVMTargetMachineRef
machine(bool portable, char *why, size_t size)
{
  char *triple = LLVMGetDefaultTargetTriple();
  char *err = NULL;
  LLVMTargetRef t;
  if (LLVMGetTargetFromTriple(triple, &t, &err)) {
    snprintf(why, size, "no LLVM target for %s: %s", triple, err ? err : "");
    LLVMDisposeMessage(err);
    LLVMDisposeMessage(triple);
    return NULL;
  }
  char *cpu = portable ? NULL : LLVMGetHostCPUName(), *feat = portable ? NULL : LLVMGetHostCPUFeatures();
  /* portable: the ISA's baseline (x86-64: SSE2), as the C path without -march=native. Code
   * generation at LLVM's -O1 level (Less): the machine passes of -O2 cost softmax and gelu
   * 10-25 % of their code generation time, and at -O1 every coil bench kernel still ran within
   * 0.93-1.05x of gcc -O3's time (runs paired on the same inputs, Zen 4 VM, 2026-12-02) */
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, triple, cpu ? cpu : "generic", feat ? feat : "",
                                                    LLVMCodeGenLevelLess, LLVMRelocPIC, LLVMCodeModelDefault);
  LLVMDisposeMessage(triple);
  if (cpu)
    LLVMDisposeMessage(cpu);
  if (feat)
    LLVMDisposeMessage(feat);
  if (!tm)
    snprintf(why, size, "LLVM cannot build a target machine for this CPU");
  return tm;
}

static char *
print_ir(LLVMModuleRef m)
{
  char *t = LLVMPrintModuleToString(m), *copy = t ? strdup(t) : NULL;
  LLVMDisposeMessage(t);
  return copy;
}

/* Links into m the run-time helpers its kernels call, from the embedded bitcode parsed lazily:
 * the helpers become linkonce_odr there, so the linker reads and moves only the ones m
 * references (and what they call); linked, they are internal to m, for the inliner. */
static int
link_helpers(LLVMModuleRef m, bool portable, coil_diag *d)
{
  char *features = portable ? NULL : LLVMGetHostCPUFeatures();
  bool fma = features && strstr(features, "+fma,") != NULL; /* the helpers with fused multiply-adds */
  LLVMDisposeMessage(features);
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(
      (const char *)(fma ? coil_cpu_llvm_rt_fma_bc : coil_cpu_llvm_rt_bc),
      fma ? coil_cpu_llvm_rt_fma_bc_size : coil_cpu_llvm_rt_bc_size, "coil_cpu_llvm_rt.bc", 0);
  LLVMModuleRef rt = NULL;
  if (LLVMGetBitcodeModuleInContext2(LLVMGetModuleContext(m), mb, &rt)) { /* rt owns mb from here */
    LLVMDisposeMemoryBuffer(mb);
    return coil_diag_set(d, "cpu (llvm): the run-time bitcode does not load into LLVM %s", COIL_LLVM_VERSION);
  }
  LLVMValueRef keep = LLVMGetNamedGlobal(rt, "coil_rt_keep");
  if (keep)
    LLVMDeleteGlobal(keep);
  for (LLVMValueRef f = LLVMGetFirstFunction(rt); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
  LLVMSetTarget(rt, LLVMGetTarget(m));
  LLVMSetDataLayout(rt, LLVMGetDataLayoutStr(m));
  if (LLVMLinkModules2(m, rt)) /* destroys rt */
    return coil_diag_set(d, "cpu (llvm): linking the run-time helpers failed");
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMLinkOnceODRLinkage)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  for (bool again = true; again;) { /* what nothing calls (a helper's unused callees) */
    again = false;
    for (LLVMValueRef f = LLVMGetFirstFunction(m), next; f; f = next) {
      next = LLVMGetNextFunction(f);
      if ((LLVMGetLinkage(f) == LLVMInternalLinkage || LLVMIsDeclaration(f)) && !LLVMGetFirstUse(f)) {
        LLVMDeleteFunction(f);
        again = true;
      }
    }
  }
  return 0;
}

static double
ms_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Tests only (COIL_CPU_LLVM_TEST_FATAL): a function calling an AArch64 intrinsic, which the
 * verifier accepts and x86's instruction selection cannot select: LLVM's report_fatal_error,
 * which ends the process it runs in. */
static void
fatal_call(LLVMModuleRef m)
{
  LLVMContextRef cx = LLVMGetModuleContext(m);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(cx), two[2] = {i32, i32};
  LLVMTypeRef ft = LLVMFunctionType(i32, two, 2, 0);
  LLVMValueRef crc = LLVMAddFunction(m, "llvm.aarch64.crc32b", ft), f = LLVMAddFunction(m, "coil_test_fatal", ft);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(cx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cx, f, "entry"));
  LLVMValueRef args[2] = {LLVMGetParam(f, 0), LLVMGetParam(f, 1)};
  LLVMBuildRet(b, LLVMBuildCall2(b, ft, crc, args, 2, ""));
  LLVMDisposeBuilder(b);
}

/* Writes the n bytes of s to fd (a file the plugin reads back if the compile dies). */
static void
write_all(int fd, const char *s, size_t n)
{
  while (n > 0) {
    ssize_t k = write(fd, s, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return;
    s += k, n -= (size_t)k;
  }
}

static int
compile(coil_wir_program *p, bool portable, const char *tag, void **obj, size_t *size, char **ir, int ir_fd,
        char *times, size_t times_size, coil_diag *d)
{
  double t0 = ms_now(), t_emit = 0, t_link = 0, t_opt = 0;
  if (times_size)
    times[0] = 0;
  *obj = NULL;
  *size = 0;
  if (ir)
    *ir = NULL;
  pthread_once(&targets_once, init_targets);
  char why[600];
  LLVMTargetMachineRef tm = take_machine(portable, why, sizeof why);
  if (!tm)
    return coil_diag_set(d, "cpu (llvm): %s", why);
  coil_strbuf log = {0};
  LLVMContextRef cx = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(cx, diagnostic, &log);
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("kernels", cx);
  int rc = -1;
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(m, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m, td);
  LLVMDisposeTargetData(td);

  kg g = {0};
  g.cx = cx;
  { /* an access group is a distinct empty node, which the C API cannot make: parse one */
    static const char text[] = "!coil.group = !{!0}\n!0 = distinct !{}\n";
    LLVMMemoryBufferRef gb = LLVMCreateMemoryBufferWithMemoryRangeCopy(text, sizeof text - 1, "group.ll");
    LLVMModuleRef gm = NULL;
    char *msg = NULL;
    if (LLVMParseIRInContext(cx, gb, &gm, &msg) == 0) { /* takes gb */
      LLVMValueRef op = NULL;
      if (LLVMGetNamedMetadataNumOperands(gm, "coil.group") == 1)
        LLVMGetNamedMetadataOperands(gm, "coil.group", &op);
      g.group = op ? LLVMValueAsMetadata(op) : NULL; /* the named node's operand: !0 itself */
      LLVMDisposeModule(gm);
    }
    LLVMDisposeMessage(msg);
  }
  g.m = m;
  g.b = LLVMCreateBuilderInContext(cx);
  g.p = p;
  g.d = d;
  g.i1 = LLVMInt1TypeInContext(cx);
  g.i8 = LLVMInt8TypeInContext(cx);
  g.i16 = LLVMInt16TypeInContext(cx);
  g.i32 = LLVMInt32TypeInContext(cx);
  g.i64 = LLVMInt64TypeInContext(cx);
  g.f32 = LLVMFloatTypeInContext(cx);
  g.f64 = LLVMDoubleTypeInContext(cx);
  g.ptr = LLVMPointerTypeInContext(cx, 0);
  g.vd = LLVMVoidTypeInContext(cx);
  g.nvars = coil_sym_nvars(p->sym);
  const char *bad = NULL;
  for (int ki = 0; ki < p->nkernels && !g.failed; ki++) {
    const coil_kernel *k = &p->kernels[ki];
    g.k = k;
    coil_c_set_loop_ranges(p, k);
    size_t n = (size_t)k->ninsts + 1;
    g.val = calloc(n, sizeof(LLVMValueRef));
    g.var = calloc((size_t)g.nvars + 1, sizeof(LLVMValueRef));
    g.indvar = malloc(n * sizeof(int));
    g.per_r = calloc(n, sizeof(bool));
    g.kept = calloc(n, sizeof(bool));
    g.done = calloc(n, sizeof(bool));
    g.row = calloc(n, sizeof(LLVMValueRef));
    g.param = calloc((size_t)k->nparams + 1, sizeof(LLVMValueRef));
    if (!g.param || !g.val || !g.var || !g.indvar || !g.per_r || !g.kept || !g.done || !g.row) {
      fail(&g, "out of memory");
    } else {
      for (int i = 0; i < k->ninsts; i++)
        g.indvar[i] = -1;
      for (int v = 0; v < g.nvars; v++) {
        int m2 = coil_wir_indirect_of(p->sym, v);
        if (m2 >= 0 && m2 < k->ninsts && k->insts[m2].op == COIL_KOP_INDIRECT)
          g.indvar[m2] = v;
      }
      coil_c_per_r(p, k, g.per_r);
      g.nrow = k->nr ? 1 : 0;
      g.row_bytes = 0;
      for (int r = 0; r < k->nr; r++) {
        int64_t c;
        g.nrow = coil_sym_is_const(k->rsize[r], &c) && c > 0 && g.nrow * c <= ROW_MAX ? g.nrow * c : 0;
      }
      emit_kernel(&g, tag);
      if (!g.failed && ki == 0 && getenv("COIL_CPU_LLVM_TEST_BREAK_IR")) /* tests: IR the verifier refuses */
        LLVMAppendBasicBlockInContext(cx, g.fn, "unterminated");
      if (!g.failed && LLVMVerifyFunction(g.fn, LLVMReturnStatusAction)) {
        bad = k->name;
        g.failed = true;
      }
    }
    free(g.val);
    free(g.var);
    free(g.indvar);
    free(g.per_r);
    free(g.kept);
    free(g.done);
    free(g.row);
    free(g.param);
  }
  LLVMDisposeBuilder(g.b);
  if (bad && ir)
    *ir = print_ir(m);
  if (bad) {
    char *msg = NULL;
    LLVMVerifyModule(m, LLVMReturnStatusAction, &msg);
    coil_diag_set(d, "cpu (llvm): internal error: the IR of kernel %s does not verify: %.1500s", bad, msg ? msg : "");
    LLVMDisposeMessage(msg);
    goto out;
  }
  if (g.failed)
    goto out;
  t_emit = ms_now();
  if (link_helpers(m, portable, d))
    goto out;
  if (ir)
    *ir = print_ir(m);
  if (ir && *ir && ir_fd >= 0)
    write_all(ir_fd, *ir, strlen(*ir));
  if (getenv("COIL_CPU_LLVM_TEST_FATAL")) /* tests: a call no x86 instruction selects, which LLVM ends the process for */
    fatal_call(m);
  t_link = ms_now();
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
  LLVMErrorRef e = LLVMRunPasses(m, PIPELINE, tm, po);
  LLVMDisposePassBuilderOptions(po);
  t_opt = ms_now();
  if (e) {
    take_error(e, why, sizeof why);
    coil_diag_set(d, "cpu (llvm): the optimiser failed: %s", why);
    goto out;
  }
  const char *dump = getenv("COIL_CPU_LLVM_DUMP_OPTIMISED"); /* debugging: the IR after the passes */
  if (dump && *dump)
    LLVMPrintModuleToFile(m, dump, NULL);
  char *err = NULL;
  LLVMMemoryBufferRef out;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &err, &out)) {
    coil_diag_set(d, "cpu (llvm): code generation failed: %s", err ? err : "");
    LLVMDisposeMessage(err);
    goto out;
  }
  *size = LLVMGetBufferSize(out);
  *obj = malloc(*size ? *size : 1);
  if (!*obj) {
    LLVMDisposeMemoryBuffer(out);
    coil_diag_set(d, "cpu (llvm): out of memory");
    goto out;
  }
  memcpy(*obj, LLVMGetBufferStart(out), *size);
  LLVMDisposeMemoryBuffer(out);
  rc = 0;
  snprintf(times, times_size, "emit %.1f ms, link and print %.1f, optimise %.1f, code generation %.1f", t_emit - t0,
           t_link - t_emit, t_opt - t_link, ms_now() - t_opt);
out:
  if (rc && log.len && strlen(d->msg) < 200) {
    char more[1200];
    snprintf(more, sizeof more, "%s (LLVM: %.900s)", d->msg, log.s);
    coil_diag_set(d, "%s", more);
  }
  if (m)
    LLVMDisposeModule(m);
  LLVMContextDispose(cx);
  give_machine(portable, tm);
  coil_strbuf_free(&log);
  return rc;
}

/* Loaded objects, shared by tag: loading an artifact twice links its object once. */
typedef struct loaded {
  char tag[64];
  int refs;
  LLVMOrcResourceTrackerRef rt;
  struct loaded *next;
} loaded;

static loaded *loads;

static void *
load(const void *obj, size_t size, const char *tag, const coil_wir_program *p, cpu_llvm_kernel_fn *fns, coil_diag *d)
{
  pthread_once(&init_once, init);
  if (!jit) {
    coil_diag_set(d, "cpu (llvm): cannot start LLVM's JIT: %s", jit_error);
    return NULL;
  }
  pthread_mutex_lock(&jit_lock);
  loaded *l = loads;
  while (l && strcmp(l->tag, tag) != 0)
    l = l->next;
  bool fresh = !l;
  if (fresh) {
    l = calloc(1, sizeof *l);
    if (!l) {
      pthread_mutex_unlock(&jit_lock);
      coil_diag_set(d, "cpu (llvm): out of memory");
      return NULL;
    }
    snprintf(l->tag, sizeof l->tag, "%s", tag);
    l->rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit));
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, size, "kernels.o");
    LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(jit, l->rt, mb);
    if (e) {
      char m[512];
      take_error(e, m, sizeof m);
      LLVMOrcReleaseResourceTracker(l->rt);
      free(l);
      pthread_mutex_unlock(&jit_lock);
      coil_diag_set(d, "cpu (llvm): the JIT refuses kernels.o: %s", m);
      return NULL;
    }
  }
  for (int k = 0; k < p->nkernels; k++) {
    char name[512];
    snprintf(name, sizeof name, "%s_%s", p->kernels[k].name, tag);
    LLVMOrcExecutorAddress a = 0;
    LLVMErrorRef e = LLVMOrcLLJITLookup(jit, &a, name);
    if (e || !a) {
      char m[512] = "not found";
      if (e)
        take_error(e, m, sizeof m);
      if (fresh) {
        LLVMErrorRef e2 = LLVMOrcResourceTrackerRemove(l->rt);
        if (e2)
          LLVMConsumeError(e2);
        LLVMOrcReleaseResourceTracker(l->rt);
        free(l);
      }
      pthread_mutex_unlock(&jit_lock);
      coil_diag_set(d, "cpu (llvm): kernel %s is not in kernels.o or does not link: %s", p->kernels[k].name, m);
      return NULL;
    }
    fns[k] = (cpu_llvm_kernel_fn)(uintptr_t)a;
  }
  if (fresh) {
    l->next = loads;
    loads = l;
  }
  l->refs++;
  pthread_mutex_unlock(&jit_lock);
  return l;
}

static void
unload(void *handle)
{
  loaded *h = handle;
  if (!h)
    return;
  pthread_mutex_lock(&jit_lock);
  if (--h->refs == 0) {
    for (loaded **at = &loads; *at; at = &(*at)->next)
      if (*at == h) {
        *at = h->next;
        break;
      }
    LLVMErrorRef e = LLVMOrcResourceTrackerRemove(h->rt);
    if (e)
      LLVMConsumeError(e);
    LLVMOrcReleaseResourceTracker(h->rt);
    free(h);
  }
  pthread_mutex_unlock(&jit_lock);
}

static void
prepare(bool portable)
{
  pthread_once(&targets_once, init_targets);
  char why[600];
  LLVMTargetMachineRef tm = take_machine(portable, why, sizeof why);
  if (tm)
    give_machine(portable, tm);
}

static void
fatal_in_child(const char *reason)
{
  static const char head[] = "LLVM ERROR: ";
  write_all(2, head, sizeof head - 1);
  write_all(2, reason, strlen(reason));
  write_all(2, "\n", 1);
  _exit(70);
}

static void
child(void)
{
  LLVMInstallFatalErrorHandler(fatal_in_child);
}

static const cpu_llvm_api api = {.version = CPU_LLVM_API_VERSION, .llvm_version = COIL_LLVM_VERSION, .target = target,
                                 .compile = compile, .prepare = prepare, .child = child, .load = load, .unload = unload};

__attribute__((visibility("default"))) const cpu_llvm_api *
coil_cpu_llvm_api(void)
{
  return &api;
}
