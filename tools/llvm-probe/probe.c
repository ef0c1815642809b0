/* G8 probe: LLVM 19's C API as the cpu plugin would use it, timed. Not part of the build.
 *
 * Builds a pointwise kernel k(out, in, n): out[i] = max(in[i]*2 + 1, 0) + expf(in[i]) in a fresh
 * context, verifies it, optimises it with "default<O2>", emits an ELF object to memory, hands
 * the object to an ORC LLJIT, looks the kernel up, runs it and checks its numbers against C.
 * Then three bad cases: IR the verifier refuses (reported, never an abort), a bf16 fptrunc
 * (does the JIT resolve __truncsfbf2 on this machine?), and an unresolved external.
 *
 *   cc -O2 -I/usr/lib/llvm-19/include tools/llvm-probe/probe.c -L/usr/lib/llvm-19/lib -lLLVM-19 -lm
 *   ./a.out [repeats [noexp]]
 *   ./a.out math FILE.bc M [repeats]: M kernels out_j[i] = coil_bc_expf(in[i] * (j + 1)) in one
 *     module, calling coil_expf of plugins/cpu/coil_cpu_math.h from bitcode that clang made at
 *     build time (clang -O2 -fno-math-errno -emit-llvm -c of a file defining
 *     float coil_bc_expf(float x) { return coil_expf(x); }), linked into each module
 */
#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void
fail(const char *what, LLVMErrorRef e)
{
  char *m = LLVMGetErrorMessage(e);
  fprintf(stderr, "probe: %s: %s\n", what, m);
  LLVMDisposeErrorMessage(m);
  exit(1);
}

enum { GOOD, BAD_IR, BF16, UNRESOLVED };
static const char *pipeline = "default<O2>";
static int no_exp; /* argv[2] "noexp": the kernel without its expf call (does the loop vectorise?) */

/* the module of one case, in context cx */
static LLVMModuleRef
build(LLVMContextRef cx, int kind)
{
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("kernels", cx);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(cx), i64 = LLVMInt64TypeInContext(cx);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(cx, 0), vt = LLVMVoidTypeInContext(cx);
  LLVMTypeRef params[] = {ptr, ptr, i64};
  LLVMValueRef fn = LLVMAddFunction(m, "k", LLVMFunctionType(vt, params, 3, 0));
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(cx, noalias, 0));
  LLVMAddAttributeAtIndex(fn, 2, LLVMCreateEnumAttribute(cx, noalias, 0));
  LLVMTypeRef unf[] = {f32};
  LLVMValueRef expf_fn = LLVMAddFunction(m, kind == UNRESOLVED ? "coil_no_such_symbol" : "expf",
                                         LLVMFunctionType(f32, unf, 1, 0));
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(cx, fn, "entry");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(cx, fn, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cx, fn, "done");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(cx);
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef zero = LLVMConstInt(i64, 0, 0), n = LLVMGetParam(fn, 2);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, n, zero, ""), loop, done);
  LLVMPositionBuilderAtEnd(b, loop);
  LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
  LLVMValueRef src = LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 1), &i, 1, "");
  LLVMValueRef x = LLVMBuildLoad2(b, f32, src, "x");
  LLVMValueRef y = LLVMBuildFAdd(b, LLVMBuildFMul(b, x, LLVMConstReal(f32, 2), ""), LLVMConstReal(f32, 1), "");
  LLVMTypeRef max2[] = {f32, f32};
  LLVMValueRef maxnum = LLVMAddFunction(m, "llvm.maxnum.f32", LLVMFunctionType(f32, max2, 2, 0));
  LLVMValueRef margs[] = {y, LLVMConstReal(f32, 0)};
  y = LLVMBuildCall2(b, LLVMFunctionType(f32, max2, 2, 0), maxnum, margs, 2, "");
  if (!no_exp) {
    LLVMValueRef e = LLVMBuildCall2(b, LLVMFunctionType(f32, unf, 1, 0), expf_fn, &x, 1, "");
    y = LLVMBuildFAdd(b, y, e, "");
  }
  if (kind == BF16) { /* round to bf16 and back */
    LLVMValueRef h = LLVMBuildFPTrunc(b, y, LLVMBFloatTypeInContext(cx), "");
    y = LLVMBuildFPExt(b, h, f32, "");
  }
  LLVMValueRef dst = LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 0), &i, 1, "");
  LLVMBuildStore(b, y, dst);
  LLVMValueRef next = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, 0), "");
  LLVMValueRef inc[] = {zero, next};
  LLVMBasicBlockRef from[] = {entry, loop};
  LLVMAddIncoming(i, inc, from, 2);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, n, ""), loop, done);
  LLVMPositionBuilderAtEnd(b, done);
  if (kind != BAD_IR) /* BAD_IR: a block without a terminator */
    LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return m;
}

typedef struct {
  double build, verify, opt, emit, jit;
} times;

/* one case from IR to a callable kernel; NULL and a message on failure */
static void *
compile(LLVMOrcLLJITRef j, LLVMTargetMachineRef tm, LLVMPassBuilderOptionsRef po, int kind, int serial, times *t,
        LLVMOrcResourceTrackerRef *rt)
{
  double t0 = now();
  LLVMContextRef cx = LLVMContextCreate();
  LLVMModuleRef m = build(cx, kind);
  LLVMSetTarget(m, LLVMOrcLLJITGetTripleString(j));
  LLVMSetDataLayout(m, LLVMOrcLLJITGetDataLayoutStr(j));
  double t1 = now();
  char *msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
    fprintf(stderr, "probe: verifier: %s", msg);
    LLVMDisposeMessage(msg);
    LLVMDisposeModule(m);
    LLVMContextDispose(cx);
    return NULL;
  }
  LLVMDisposeMessage(msg);
  double t2 = now();
  LLVMErrorRef e = LLVMRunPasses(m, pipeline, tm, po);
  if (e)
    fail("passes", e);
  double t3 = now();
  LLVMMemoryBufferRef obj;
  char *err = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &err, &obj)) {
    fprintf(stderr, "probe: emit: %s\n", err);
    exit(1);
  }
  if (serial == 0 && kind == GOOD) { /* the optimised IR once, to see the vector loop */
    char *ir = LLVMPrintModuleToString(m);
    FILE *f = fopen("probe-k.ll", "w");
    if (f)
      fputs(ir, f), fclose(f);
    LLVMDisposeMessage(ir);
  }
  LLVMDisposeModule(m);
  LLVMContextDispose(cx);
  double t4 = now();
  *rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(j));
  /* each case's k under a name of its own: one JITDylib holds them all */
  if ((e = LLVMOrcLLJITAddObjectFileWithRT(j, *rt, obj)))
    fail("add object", e);
  LLVMOrcExecutorAddress a = 0;
  if ((e = LLVMOrcLLJITLookup(j, &a, "k"))) {
    char *em = LLVMGetErrorMessage(e);
    fprintf(stderr, "probe: lookup: %s\n", em);
    LLVMDisposeErrorMessage(em);
    return NULL;
  }
  double t5 = now();
  *t = (times){t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4};
  return (void *)(uintptr_t)a;
}

static int
cmpd(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* math probe: the bitcode linked into a module of m kernels k0..k{m-1} */
static LLVMModuleRef
build_math(LLVMContextRef cx, const char *bc, size_t bclen, int m)
{
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("kernels", cx), lib;
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(bc, bclen, "math.bc");
  if (LLVMParseBitcodeInContext2(cx, mb, &lib))
    fprintf(stderr, "probe: bitcode refused\n"), exit(1);
  LLVMDisposeMemoryBuffer(mb);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(cx), i64 = LLVMInt64TypeInContext(cx);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(cx, 0), vt = LLVMVoidTypeInContext(cx);
  LLVMTypeRef params[] = {ptr, ptr, i64}, unf[] = {f32};
  LLVMTypeRef ft = LLVMFunctionType(f32, unf, 1, 0);
  LLVMValueRef ex = LLVMAddFunction(mod, "coil_bc_expf", ft);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(cx);
  for (int j = 0; j < m; j++) {
    char name[16];
    snprintf(name, sizeof name, "k%d", j);
    LLVMValueRef fn = LLVMAddFunction(mod, name, LLVMFunctionType(vt, params, 3, 0));
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(cx, noalias, 0));
    LLVMAddAttributeAtIndex(fn, 2, LLVMCreateEnumAttribute(cx, noalias, 0));
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(cx, fn, "entry");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(cx, fn, "loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cx, fn, "done");
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef zero = LLVMConstInt(i64, 0, 0), n = LLVMGetParam(fn, 2);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, n, zero, ""), loop, done);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
    LLVMValueRef x = LLVMBuildLoad2(b, f32, LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 1), &i, 1, ""), "x");
    x = LLVMBuildFMul(b, x, LLVMConstReal(f32, j + 1), "");
    LLVMValueRef y = LLVMBuildCall2(b, ft, ex, &x, 1, "");
    LLVMBuildStore(b, y, LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 0), &i, 1, ""));
    LLVMValueRef next = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, 0), "");
    LLVMValueRef inc[] = {zero, next};
    LLVMBasicBlockRef from[] = {entry, loop};
    LLVMAddIncoming(i, inc, from, 2);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, n, ""), loop, done);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
  }
  LLVMDisposeBuilder(b);
  if (LLVMLinkModules2(mod, lib)) /* takes lib */
    fprintf(stderr, "probe: link failed\n"), exit(1);
  /* the library's functions are the module's own now: internal, so that they inline and go */
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && strncmp(LLVMGetValueName(f), "coil_bc_", 8) == 0)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  return mod;
}

static int
math_probe(LLVMOrcLLJITRef j, LLVMTargetMachineRef tm, LLVMPassBuilderOptionsRef po, const char *file, int m, int reps)
{
  FILE *f = fopen(file, "rb");
  if (!f)
    return fprintf(stderr, "probe: %s: cannot open\n", file), 1;
  static char bc[1 << 20];
  size_t bclen = fread(bc, 1, sizeof bc, f);
  fclose(f);
  double *tot = calloc((size_t)reps, sizeof *tot), ph[4] = {0};
  enum { N = 1003 };
  float in[N], out[N];
  for (int i = 0; i < N; i++)
    in[i] = (float)(i - 500) / 50.0f;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    LLVMContextRef cx = LLVMContextCreate();
    LLVMModuleRef mod = build_math(cx, bc, bclen, m);
    LLVMSetTarget(mod, LLVMOrcLLJITGetTripleString(j));
    LLVMSetDataLayout(mod, LLVMOrcLLJITGetDataLayoutStr(j));
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
      return fprintf(stderr, "probe: verifier: %s", msg), 1;
    LLVMDisposeMessage(msg);
    double t1 = now();
    LLVMErrorRef e = LLVMRunPasses(mod, pipeline, tm, po);
    if (e)
      fail("passes", e);
    double t2 = now();
    if (r == 0) {
      char *ir = LLVMPrintModuleToString(mod);
      FILE *o = fopen("probe-math.ll", "w");
      if (o)
        fputs(ir, o), fclose(o);
      LLVMDisposeMessage(ir);
    }
    LLVMMemoryBufferRef obj;
    char *err = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &obj))
      return fprintf(stderr, "probe: emit: %s\n", err), 1;
    LLVMDisposeModule(mod);
    LLVMContextDispose(cx);
    double t3 = now();
    LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(j));
    if ((e = LLVMOrcLLJITAddObjectFileWithRT(j, rt, obj)))
      fail("add object", e);
    for (int k = 0; k < m; k++) {
      char name[16];
      snprintf(name, sizeof name, "k%d", k);
      LLVMOrcExecutorAddress a;
      if ((e = LLVMOrcLLJITLookup(j, &a, name)))
        fail("lookup", e);
      if (k == m - 1 || k == 0) {
        ((void (*)(float *, const float *, int64_t))(uintptr_t)a)(out, in, N);
        for (int i = 0; i < N; i++) {
          float want = expf(in[i] * (float)(k + 1));
          if (fabsf(out[i] - want) > 4e-7f * fabsf(want) && !(isinf(want) && out[i] == want))
            return fprintf(stderr, "probe: k%d[%d] = %.9g, want %.9g\n", k, i, out[i], want), 1;
        }
      }
    }
    double t4 = now();
    if ((e = LLVMOrcResourceTrackerRemove(rt)))
      fail("remove", e);
    LLVMOrcReleaseResourceTracker(rt);
    tot[r] = t4 - t0;
    ph[0] += t1 - t0, ph[1] += t2 - t1, ph[2] += t3 - t2, ph[3] += t4 - t3;
  }
  qsort(tot, (size_t)reps, sizeof *tot, cmpd);
  printf("math: %d kernels calling coil_expf (bitcode, %zu bytes) x%d: median %.3f ms (min %.3f); mean "
         "parse+link+build+verify %.3f, O2 %.3f, emit %.3f, jit+run %.3f ms; numbers within 4e-7 of expf\n",
         m, bclen, reps, 1e3 * tot[reps / 2], 1e3 * tot[0], 1e3 * ph[0] / reps, 1e3 * ph[1] / reps, 1e3 * ph[2] / reps,
         1e3 * ph[3] / reps);
  free(tot);
  return 0;
}

int
main(int argc, char **argv)
{
  int reps = argc > 1 && strcmp(argv[1], "math") ? atoi(argv[1]) : 20;
  no_exp = argc > 2 && strcmp(argv[2], "noexp") == 0;
  double s0 = now();
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  LLVMOrcLLJITRef j;
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&j, NULL);
  if (e)
    fail("LLJIT", e);
  char *cpu = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(LLVMOrcLLJITGetTripleString(j), &target, &err))
    return fprintf(stderr, "probe: target: %s\n", err), 1;
  /* PROBE_CG=0..3 the code generator's level (default 2), PROBE_PASSES the pipeline (default
   * "default<O2>"), PROBE_INTERLEAVE=0 / PROBE_UNROLL=0 turn those off */
  const char *cg = getenv("PROBE_CG"), *il = getenv("PROBE_INTERLEAVE"), *ur = getenv("PROBE_UNROLL");
  if (getenv("PROBE_PASSES"))
    pipeline = getenv("PROBE_PASSES");
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, LLVMOrcLLJITGetTripleString(j), cpu, feat,
                                                    cg ? (LLVMCodeGenOptLevel)atoi(cg) : LLVMCodeGenLevelDefault,
                                                    LLVMRelocPIC, LLVMCodeModelSmall);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(po, !il || atoi(il) != 0);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, !ur || atoi(ur) != 0);
  printf("code generator level %s, passes %s, interleaving %s, unrolling %s\n", cg ? cg : "2", pipeline,
         il && !atoi(il) ? "off" : "on", ur && !atoi(ur) ? "off" : "on");
  printf("host %s, triple %s; set-up %.2f ms\n", cpu, LLVMOrcLLJITGetTripleString(j), 1e3 * (now() - s0));
  if (argc > 3 && strcmp(argv[1], "math") == 0)
    return math_probe(j, tm, po, argv[2], atoi(argv[3]), argc > 4 ? atoi(argv[4]) : 10);

  double *tot = calloc((size_t)reps, sizeof *tot), sum[5] = {0};
  enum { N = 1003 };
  float in[N], out[N];
  for (int i = 0; i < N; i++)
    in[i] = (float)(i - 500) / 100.0f;
  for (int r = 0; r < reps; r++) {
    times t;
    LLVMOrcResourceTrackerRef rt;
    void (*k)(float *, const float *, int64_t) = (void (*)(float *, const float *, int64_t))compile(j, tm, po, GOOD, r, &t, &rt);
    if (!k)
      return 1;
    memset(out, 0, sizeof out);
    k(out, in, N);
    for (int i = 0; i < N; i++) {
      float want = fmaxf(in[i] * 2 + 1, 0) + (no_exp ? 0 : expf(in[i]));
      if (fabsf(out[i] - want) > 1e-6f * fabsf(want))
        return fprintf(stderr, "probe: k[%d] = %g, want %g\n", i, out[i], want), 1;
    }
    if ((e = LLVMOrcResourceTrackerRemove(rt)))
      fail("remove", e);
    LLVMOrcReleaseResourceTracker(rt);
    tot[r] = t.build + t.verify + t.opt + t.emit + t.jit;
    sum[0] += t.build, sum[1] += t.verify, sum[2] += t.opt, sum[3] += t.emit, sum[4] += t.jit;
  }
  qsort(tot, (size_t)reps, sizeof *tot, cmpd);
  printf("good kernel x%d: median %.3f ms (min %.3f); mean build %.3f, verify %.3f, O2 %.3f, emit %.3f, jit %.3f ms; "
         "numbers match C\n",
         reps, 1e3 * tot[reps / 2], 1e3 * tot[0], 1e3 * sum[0] / reps, 1e3 * sum[1] / reps, 1e3 * sum[2] / reps,
         1e3 * sum[3] / reps, 1e3 * sum[4] / reps);

  static const char *const names[] = {"", "IR without a terminator", "bf16 fptrunc", "unresolved external"};
  for (int kind = BAD_IR; kind <= UNRESOLVED; kind++) {
    times t;
    LLVMOrcResourceTrackerRef rt = NULL;
    void *k = compile(j, tm, po, kind, 1, &t, &rt);
    printf("%s: %s\n", names[kind], k ? "compiled and linked" : "refused (message above)");
    if (rt) {
      if ((e = LLVMOrcResourceTrackerRemove(rt)))
        fail("remove", e);
      LLVMOrcReleaseResourceTracker(rt);
    }
  }
  LLVMDisposePassBuilderOptions(po);
  LLVMDisposeTargetMachine(tm);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(feat);
  if ((e = LLVMOrcDisposeLLJIT(j)))
    fail("dispose", e);
  free(tot);
  return 0;
}
