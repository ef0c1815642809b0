/* op_cases.h — the op tier's case templates: one or more per op of core/ops.def.
 *
 * A template names the op under test, its inputs and a body of .coil statements that use them
 * as %a, %b, %c, ... and define %out (or end in their own `return`). The suite expands each
 * template over the dtypes it allows and the shape classes that apply (conformance/tier_op.c):
 *
 *   inputs: space-separated specs KIND[DIMS]MOD
 *     KIND  T (the case's dtype), f32, i64, bool
 *     DIMS  for pointwise templates (PW) nothing: the shape class decides; otherwise sizes,
 *           numbers or the letters A B C D (5 7 3 4 in the base class; other classes rebind)
 *     MOD   + positive values; <X integers in [0, X) (X a number or letter): valid indices
 *   body: $T is the case's dtype name, $A..$D the letters' values.
 *
 * Flags: PW — pointwise and broadcasting: the classes scalar, odd1d, broadcast, permuted,
 * sliced, zero, large, unaligned, symbolic and chain (pointwise → reduction → pointwise) apply;
 * otherwise base, odd, permuted, sliced, unaligned and, with Z / L / S, zero, large, symbolic
 * (A becomes the size symbol s0, run at two sizes). NB: no broadcast class (copy_ writes into
 * its first operand, which cannot broadcast). NV: no permuted or sliced class (the first input
 * is written in place, which a permute or a strided slice of it cannot be). */
#ifndef COIL_OP_CASES_H
#define COIL_OP_CASES_H

enum { DT_F32 = 1, DT_F16 = 2, DT_BF16 = 4, DT_I64 = 8, DT_BOOL = 16 };
#define DT_FL (DT_F32 | DT_F16 | DT_BF16)
#define DT_NUM (DT_FL | DT_I64)
#define DT_ALL (DT_NUM | DT_BOOL)

enum { PW = 1, Z = 2, L = 4, S = 8, NB = 16, NV = 32 };

typedef struct op_template {
  const char *op;      /* the ATen op the case tests (its name in the reports) */
  const char *variant; /* "" or a tag added to the shape class, e.g. "tanh" */
  const char *inputs;
  const char *body;
  unsigned dtypes;
  unsigned flags;
} op_template;

static const op_template op_templates[] = {
    /* ---- pointwise, unary ---- */
    {"aten.abs.default", "", "T", "%out = aten.abs.default(%a)", DT_NUM, PW},
    {"aten.neg.default", "", "T", "%out = aten.neg.default(%a)", DT_NUM, PW},
    {"aten.relu.default", "", "T", "%out = aten.relu.default(%a)", DT_NUM, PW},
    {"aten.floor.default", "", "T", "%out = aten.floor.default(%a)", DT_NUM, PW},
    {"aten.ceil.default", "", "T", "%out = aten.ceil.default(%a)", DT_NUM, PW},
    {"aten.round.default", "", "T", "%out = aten.round.default(%a)", DT_NUM, PW},
    {"aten.trunc.default", "", "T", "%out = aten.trunc.default(%a)", DT_NUM, PW},
    {"aten.bitwise_not.default", "", "T", "%out = aten.bitwise_not.default(%a)", DT_I64 | DT_BOOL, PW},
    {"aten.leaky_relu.default", "", "T", "%out = aten.leaky_relu.default(%a, 0.1)", DT_FL, PW},
    {"aten.exp.default", "", "T", "%out = aten.exp.default(%a)", DT_FL, PW},
    {"aten.log.default", "", "T+", "%out = aten.log.default(%a)", DT_FL, PW},
    {"aten.log1p.default", "", "T+", "%out = aten.log1p.default(%a)", DT_FL, PW},
    {"aten.sqrt.default", "", "T+", "%out = aten.sqrt.default(%a)", DT_FL, PW},
    {"aten.rsqrt.default", "", "T+", "%out = aten.rsqrt.default(%a)", DT_FL, PW},
    {"aten.reciprocal.default", "", "T+", "%out = aten.reciprocal.default(%a)", DT_FL, PW},
    {"aten.sin.default", "", "T", "%out = aten.sin.default(%a)", DT_FL, PW},
    {"aten.cos.default", "", "T", "%out = aten.cos.default(%a)", DT_FL, PW},
    {"aten.tanh.default", "", "T", "%out = aten.tanh.default(%a)", DT_FL, PW},
    {"aten.sigmoid.default", "", "T", "%out = aten.sigmoid.default(%a)", DT_FL, PW},
    {"aten.erf.default", "", "T", "%out = aten.erf.default(%a)", DT_FL, PW},
    {"aten.gelu.default", "", "T", "%out = aten.gelu.default(%a)", DT_FL, PW},
    {"aten.gelu.default", "tanh", "T", "%out = aten.gelu.default(%a, approximate='tanh')", DT_FL, PW},
    {"aten.silu.default", "", "T", "%out = aten.silu.default(%a)", DT_FL, PW},
    {"aten.logical_not.default", "", "T", "%out = aten.logical_not.default(%a)", DT_ALL, PW},
    {"aten._to_copy.default", "f32", "T", "%out = aten._to_copy.default(%a, dtype=f32)", DT_ALL, PW},
    {"aten._to_copy.default", "bf16", "T", "%out = aten._to_copy.default(%a, dtype=bf16)", DT_ALL, PW},
    {"aten._to_copy.default", "i64", "T", "%out = aten._to_copy.default(%a, dtype=i64)", DT_ALL, PW},
    {"aten.clamp.default", "", "T", "%out = aten.clamp.default(%a, -1, 1)", DT_NUM, PW},
    /* ---- pointwise, binary and ternary ---- */
    {"aten.add.Tensor", "", "T T", "%out = aten.add.Tensor(%a, %b)", DT_NUM, PW},
    {"aten.add.Tensor", "alpha", "T T", "%out = aten.add.Tensor(%a, %b, alpha=2)", DT_NUM, PW},
    {"aten.add.Scalar", "", "T", "%out = aten.add.Scalar(%a, 2)", DT_NUM, PW},
    {"aten.sub.Tensor", "", "T T", "%out = aten.sub.Tensor(%a, %b)", DT_NUM, PW},
    {"aten.sub.Scalar", "", "T", "%out = aten.sub.Scalar(%a, 2)", DT_NUM, PW},
    {"aten.rsub.Tensor", "", "T T", "%out = aten.rsub.Tensor(%a, %b)", DT_NUM, PW},
    {"aten.rsub.Scalar", "", "T", "%out = aten.rsub.Scalar(%a, 2)", DT_NUM, PW},
    {"aten.mul.Tensor", "", "T T", "%out = aten.mul.Tensor(%a, %b)", DT_ALL, PW},
    {"aten.mul.Scalar", "", "T", "%out = aten.mul.Scalar(%a, 3)", DT_NUM, PW},
    {"aten.div.Tensor", "", "T T+", "%out = aten.div.Tensor(%a, %b)", DT_NUM, PW},
    {"aten.div.Scalar", "", "T", "%out = aten.div.Scalar(%a, 4)", DT_NUM, PW},
    {"aten.div.Tensor_mode", "floor", "T T+", "%out = aten.div.Tensor_mode(%a, %b, rounding_mode='floor')", DT_NUM, PW},
    {"aten.div.Tensor_mode", "trunc", "T T+", "%out = aten.div.Tensor_mode(%a, %b, rounding_mode='trunc')", DT_NUM, PW},
    {"aten.pow.Tensor_Scalar", "", "T", "%out = aten.pow.Tensor_Scalar(%a, 2)", DT_NUM, PW},
    {"aten.pow.Tensor_Scalar", "sqrt", "T+", "%out = aten.pow.Tensor_Scalar(%a, 0.5)", DT_FL, PW},
    {"aten.pow.Tensor_Tensor", "", "T+ T", "%out = aten.pow.Tensor_Tensor(%a, %b)", DT_FL, PW},
    {"aten.pow.Scalar", "", "T", "%out = aten.pow.Scalar(2.0, %a)", DT_FL, PW},
    {"aten.maximum.default", "", "T T", "%out = aten.maximum.default(%a, %b)", DT_NUM, PW},
    {"aten.minimum.default", "", "T T", "%out = aten.minimum.default(%a, %b)", DT_NUM, PW},
    {"aten.bitwise_and.Tensor", "", "T T", "%out = aten.bitwise_and.Tensor(%a, %b)", DT_I64 | DT_BOOL, PW},
    {"aten.bitwise_or.Tensor", "", "T T", "%out = aten.bitwise_or.Tensor(%a, %b)", DT_I64 | DT_BOOL, PW},
    {"aten.logical_and.default", "", "T T", "%out = aten.logical_and.default(%a, %b)", DT_ALL, PW},
    {"aten.logical_or.default", "", "T T", "%out = aten.logical_or.default(%a, %b)", DT_ALL, PW},
    {"aten.eq.Tensor", "", "T T", "%out = aten.eq.Tensor(%a, %b)", DT_ALL, PW},
    {"aten.ne.Tensor", "", "T T", "%out = aten.ne.Tensor(%a, %b)", DT_ALL, PW},
    {"aten.lt.Tensor", "", "T T", "%out = aten.lt.Tensor(%a, %b)", DT_NUM, PW},
    {"aten.le.Tensor", "", "T T", "%out = aten.le.Tensor(%a, %b)", DT_NUM, PW},
    {"aten.gt.Tensor", "", "T T", "%out = aten.gt.Tensor(%a, %b)", DT_NUM, PW},
    {"aten.ge.Tensor", "", "T T", "%out = aten.ge.Tensor(%a, %b)", DT_NUM, PW},
    {"aten.eq.Scalar", "", "T", "%out = aten.eq.Scalar(%a, 1)", DT_NUM, PW},
    {"aten.ne.Scalar", "", "T", "%out = aten.ne.Scalar(%a, 1)", DT_NUM, PW},
    {"aten.lt.Scalar", "", "T", "%out = aten.lt.Scalar(%a, 0.5)", DT_NUM, PW},
    {"aten.le.Scalar", "", "T", "%out = aten.le.Scalar(%a, 0)", DT_NUM, PW},
    {"aten.gt.Scalar", "", "T", "%out = aten.gt.Scalar(%a, 0.5)", DT_NUM, PW},
    {"aten.ge.Scalar", "", "T", "%out = aten.ge.Scalar(%a, 0)", DT_NUM, PW},
    {"aten.where.self", "", "bool T T", "%out = aten.where.self(%a, %b, %c)", DT_ALL, PW},
    {"aten.clamp.Tensor", "", "T T T", "%out = aten.clamp.Tensor(%a, %b, %c)", DT_NUM, PW},
    {"aten.copy.default", "", "T T", "%out = aten.copy.default(%a, %b)", DT_ALL, PW | NB},
    /* ---- creation ---- */
    {"aten.full_like.default", "", "T", "%out = aten.full_like.default(%a, 3)", DT_NUM, PW},
    {"aten.zeros_like.default", "", "T", "%out = aten.zeros_like.default(%a)", DT_ALL, PW},
    {"aten.ones_like.default", "", "T", "%out = aten.ones_like.default(%a)", DT_ALL, PW},
    {"aten.full.default", "", "", "%out = aten.full.default([5, 7], 2, dtype=$T)", DT_ALL, 0},
    {"aten.scalar_tensor.default", "", "", "%out = aten.scalar_tensor.default(3, dtype=$T)", DT_NUM, 0},
    {"aten.arange.default", "", "", "%out = aten.arange.default(11, dtype=$T)", DT_F32 | DT_I64, 0},
    {"aten.arange.start", "", "", "%out = aten.arange.start(-3, 8, dtype=$T)", DT_F32 | DT_I64, 0},
    {"aten.arange.start_step", "", "", "%out = aten.arange.start_step(1, 20, 3, dtype=$T)", DT_F32 | DT_I64, 0},
    /* ---- reductions ---- */
    {"aten.sum.default", "", "T[A, B]", "%out = aten.sum.default(%a)", DT_NUM, Z | L | S},
    {"aten.sum.dim_IntList", "", "T[A, B]", "%out = aten.sum.dim_IntList(%a, [1])", DT_NUM, Z | L | S},
    {"aten.sum.dim_IntList", "dim0keep", "T[A, B, C]", "%out = aten.sum.dim_IntList(%a, [0], True)", DT_NUM, Z | S},
    {"aten.mean.default", "", "T[A, B]", "%out = aten.mean.default(%a)", DT_FL, L | S},
    {"aten.mean.dim", "", "T[A, B, C]", "%out = aten.mean.dim(%a, [-1, 0])", DT_FL, S},
    {"aten.prod.default", "", "T[A]", "%out = aten.prod.default(%a)", DT_FL | DT_I64, S},
    {"aten.prod.dim_int", "", "T[A, C]", "%out = aten.prod.dim_int(%a, 1)", DT_FL | DT_I64, S},
    {"aten.amax.default", "", "T[A, B]", "%out = aten.amax.default(%a, [1])", DT_NUM, L | S},
    {"aten.amin.default", "", "T[A, B]", "%out = aten.amin.default(%a, [0], True)", DT_NUM, S},
    {"aten.any.default", "", "T[A, B]", "%out = aten.any.default(%a)", DT_ALL, Z | S},
    {"aten.any.dim", "", "T[A, B]", "%out = aten.any.dim(%a, 1)", DT_ALL, Z | S},
    {"aten.any.dims", "", "T[A, B, C]", "%out = aten.any.dims(%a, [0, 2], True)", DT_ALL, S},
    {"aten.var.correction", "", "T[A, B]", "%out = aten.var.correction(%a, [1], correction=1)", DT_FL, L | S},
    {"aten.var.correction", "all", "T[A, B]", "%out = aten.var.correction(%a, None, correction=0)", DT_FL, L | S},
    {"aten.var_mean.correction", "", "T[A, B]",
     "%vm = aten.var_mean.correction(%a, [1], correction=1, keepdim=True)\n"
     "%out = getitem(%vm, 0)\n%out1 = getitem(%vm, 1)\nreturn (%out, %out1)", DT_FL, S},
    {"aten.argmax.default", "", "T[A, B]", "%out = aten.argmax.default(%a, 1)", DT_FL, S},
    {"aten.argmin.default", "", "T[A, B]", "%out = aten.argmin.default(%a, 0, True)", DT_FL, S},
    {"aten.argmax.default", "all", "T[A, B]", "%out = aten.argmax.default(%a)", DT_FL, L | S},
    {"aten.max.dim", "", "T[A, B]",
     "%m = aten.max.dim(%a, 1)\n%out = getitem(%m, 0)\n%out1 = getitem(%m, 1)\nreturn (%out, %out1)", DT_FL, S},
    {"aten.min.dim", "", "T[A, B]",
     "%m = aten.min.dim(%a, 0, True)\n%out = getitem(%m, 0)\n%out1 = getitem(%m, 1)\nreturn (%out, %out1)", DT_FL, S},
    /* ---- composites ---- */
    {"aten._softmax.default", "", "T[A, B]", "%out = aten._softmax.default(%a, -1, False)", DT_FL, L | S},
    {"aten._softmax.default", "dim0", "T[A, B]", "%out = aten._softmax.default(%a, 0, False)", DT_FL, S},
    {"aten._log_softmax.default", "", "T[A, B]", "%out = aten._log_softmax.default(%a, 1, False)", DT_FL, S},
    {"aten.native_layer_norm.default", "", "T[A, B] T[B] T[B]",
     "%ln = aten.native_layer_norm.default(%a, [$B], %b, %c, 1e-05)\n%out = getitem(%ln, 0)\n"
     "%out1 = getitem(%ln, 1)\n%out2 = getitem(%ln, 2)\nreturn (%out, %out1, %out2)", DT_FL, L | S},
    {"aten._native_batch_norm_legit_no_training.default", "", "T[A, C, B] T[C] T[C] T[C] T[C]+",
     "%bn = aten._native_batch_norm_legit_no_training.default(%a, %b, %c, %d, %e, 0.1, 1e-05)\n"
     "%out = getitem(%bn, 0)", DT_FL, S},
    /* ---- views and data movement ---- */
    {"aten.view.default", "", "T[A, B]", "%out = aten.view.default(%a, [-1])", DT_ALL, Z | S},
    {"aten.reshape.default", "", "T[A, B, C]", "%out = aten.reshape.default(%a, [-1, $C])", DT_ALL, S},
    {"aten._unsafe_view.default", "", "T[A, B]", "%out = aten._unsafe_view.default(%a, [$B, $A])", DT_ALL, 0},
    {"aten.permute.default", "", "T[A, B, C]", "%out = aten.permute.default(%a, [2, 0, 1])", DT_ALL, Z | S},
    {"aten.t.default", "", "T[A, B]", "%out = aten.t.default(%a)", DT_ALL, Z | S},
    {"aten.transpose.int", "", "T[A, B, C]", "%out = aten.transpose.int(%a, 0, 2)", DT_ALL, S},
    {"aten.expand.default", "", "T[A, 1]", "%out = aten.expand.default(%a, [-1, 6])", DT_ALL, S},
    {"aten.slice.Tensor", "", "T[A, B]", "%out = aten.slice.Tensor(%a, 1, 1, 6, 2)", DT_ALL, S},
    {"aten.select.int", "", "T[A, B]", "%out = aten.select.int(%a, 1, 2)", DT_ALL, S},
    {"aten.squeeze.default", "", "T[A, 1, B]", "%out = aten.squeeze.default(%a)", DT_ALL, 0},
    {"aten.squeeze.dim", "", "T[A, 1, B]", "%out = aten.squeeze.dim(%a, 1)", DT_ALL, S},
    {"aten.squeeze.dims", "", "T[1, A, 1]", "%out = aten.squeeze.dims(%a, [0, 2])", DT_ALL, S},
    {"aten.unsqueeze.default", "", "T[A, B]", "%out = aten.unsqueeze.default(%a, 1)", DT_ALL, S},
    {"aten.alias.default", "", "T[A, B]", "%out = aten.alias.default(%a)", DT_ALL, S},
    {"aten.clone.default", "", "T[A, B]", "%out = aten.clone.default(%a)", DT_ALL, Z | L | S},
    {"aten.cat.default", "", "T[A, B] T[C, B]", "%out = aten.cat.default([%a, %b])", DT_ALL, Z | S},
    {"aten.cat.default", "dim1", "T[A, B] T[A, C]", "%out = aten.cat.default([%a, %b], 1)", DT_ALL, S},
    {"aten.split_with_sizes.default", "", "T[A, 9]",
     "%sp = aten.split_with_sizes.default(%a, [2, 3, 4], 1)\n%out = getitem(%sp, 0)\n%out1 = getitem(%sp, 2)\n"
     "return (%out, %out1)", DT_ALL, S},
    {"aten.split.Tensor", "", "T[8, B]",
     "%sp = aten.split.Tensor(%a, 3)\n%out = getitem(%sp, 1)\n%out1 = getitem(%sp, 2)\nreturn (%out, %out1)", DT_ALL, 0},
    {"aten.constant_pad_nd.default", "", "T[A, B]", "%out = aten.constant_pad_nd.default(%a, [1, 2, 0, 1], 3)", DT_NUM, S},
    /* outputs that are views of a library op's result (reshaped, twice), an input returned as
     * it is, a transpose of it, a reshape of a fused value: shapes and values as ref's */
    {"aten.view.default", "outputs", "T[A, B] T[B, C]",
     "%m = aten.mm.default(%a, %b)\n%out = aten.view.default(%m, [-1])\n%out1 = aten.t.default(%a)\n"
     "%r = aten.relu.default(%m)\n%out2 = aten.view.default(%r, [-1, 1, $C])\nreturn (%out, %a, %out1, %out2, %out)",
     DT_FL, S},
    /* a pointwise op over a reshape of a reduction: written in place only where the sizes match */
    {"aten.view.default", "inplace", "T[A, 4]",
     "%s = aten.sum.dim_IntList(%a, [1])\n%v = aten.view.default(%s, [1, -1])\n%out = aten.add.Tensor(%v, 1)",
     DT_FL, S},
    /* ---- library ops ---- */
    {"aten.mm.default", "", "T[A, B] T[B, C]", "%out = aten.mm.default(%a, %b)", DT_FL | DT_I64, Z | S},
    {"aten.mm.default", "k300", "T[A, 300] T[300, C]", "%out = aten.mm.default(%a, %b)", DT_F32, S},
    {"aten.bmm.default", "", "T[D, A, B] T[D, B, C]", "%out = aten.bmm.default(%a, %b)", DT_FL, S},
    {"aten.addmm.default", "", "T[C] T[A, B] T[B, C]", "%out = aten.addmm.default(%a, %b, %c)", DT_FL, S},
    {"aten.addmm.default", "scaled", "T[A, C] T[A, B] T[B, C]",
     "%out = aten.addmm.default(%a, %b, %c, beta=0.5, alpha=2)", DT_F32, 0},
    {"aten.convolution.default", "", "T[2, 3, A, B] T[4, 3, 3, 3] T[4]",
     "%out = aten.convolution.default(%a, %b, %c, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)", DT_FL, 0},
    {"aten.convolution.default", "groups", "T[1, 4, 9, 8] T[6, 2, 3, 2] T[6]",
     "%out = aten.convolution.default(%a, %b, %c, [2, 1], [1, 0], [2, 1], False, [0, 0], 2)", DT_F32, 0},
    /* the corners of the generated kernel (core/lower_conv.c): 1-D and 3-D (N and Co folded into
     * one loop dim), depthwise with and without a channel multiplier, stride 2 on odd sizes,
     * dilation 2 with padding, no bias, symbolic spatial sizes, transposed (gathered) */
    {"aten.convolution.default", "1d", "T[2, 4, 11] T[6, 4, 3] T[6]",
     "%out = aten.convolution.default(%a, %b, %c, [2], [1], [1], False, [0], 1)", DT_FL, 0},
    {"aten.convolution.default", "3d", "T[2, 4, 5, 6, 7] T[6, 2, 3, 2, 3] T[6]",
     "%out = aten.convolution.default(%a, %b, %c, [1, 2, 1], [1, 0, 1], [1, 1, 2], False, [0, 0, 0], 2)", DT_FL, 0},
    {"aten.convolution.default", "depthwise", "T[2, 6, 9, 7] T[6, 1, 3, 3]",
     "%out = aten.convolution.default(%a, %b, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 6)", DT_FL, 0},
    {"aten.convolution.default", "depthwise_x2", "T[1, 3, 8, 7] T[6, 1, 5, 5] T[6]",
     "%out = aten.convolution.default(%a, %b, %c, [1, 1], [2, 2], [1, 1], False, [0, 0], 3)", DT_F32, 0},
    {"aten.convolution.default", "stride2", "T[1, 4, 11, 9] T[8, 4, 3, 3] T[8]",
     "%out = aten.convolution.default(%a, %b, %c, [2, 2], [0, 0], [1, 1], False, [0, 0], 1)", DT_F32, 0},
    {"aten.convolution.default", "dilation2", "T[1, 3, 13, 11] T[4, 3, 3, 3] T[4]",
     "%out = aten.convolution.default(%a, %b, %c, [1, 1], [2, 2], [2, 2], False, [0, 0], 1)", DT_FL, 0},
    {"aten.convolution.default", "nobias", "T[2, 3, A, B] T[5, 3, 1, 1]",
     "%out = aten.convolution.default(%a, %b, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)", DT_FL, S},
    {"aten.convolution.default", "padded_sym", "T[1, 2, A, 6] T[3, 2, 3, 3] T[3]",
     "%out = aten.convolution.default(%a, %b, %c, [2, 1], [1, 1], [1, 1], False, [0, 0], 1)", DT_F32, S},
    {"aten.convolution.default", "transposed", "T[1, 4, 5, 6] T[4, 3, 3, 3] T[6]",
     "%out = aten.convolution.default(%a, %b, %c, [2, 2], [1, 1], [1, 1], True, [1, 0], 2)", DT_FL, 0},
    {"aten.convolution.default", "transposed1d", "T[2, 3, 7] T[3, 2, 4]",
     "%out = aten.convolution.default(%a, %b, None, [1], [2], [2], True, [0], 1)", DT_F32, 0},
    {"aten.max_pool2d_with_indices.default", "", "T[2, 3, 9, A]",
     "%mp = aten.max_pool2d_with_indices.default(%a, [2, 2], [2, 2], [1, 1])\n%out = getitem(%mp, 0)\n"
     "%out1 = getitem(%mp, 1)\nreturn (%out, %out1)", DT_FL, 0},
    {"aten.avg_pool2d.default", "", "T[2, 3, 8, A]", "%out = aten.avg_pool2d.default(%a, [3, 3], [2, 2], [1, 1])", DT_FL, 0},
    /* pooling's corners: the core lowers it to window reductions (core/lower_pool.c) */
    {"aten.max_pool2d_with_indices.default", "ceil_dil", "T[2, 3, 9, A]",
     "%mp = aten.max_pool2d_with_indices.default(%a, [3, 3], [2, 2], [1, 1], [2, 2], True)\n%out = getitem(%mp, 0)\n"
     "%out1 = getitem(%mp, 1)\nreturn (%out, %out1)", DT_FL | DT_I64, 0},
    /* NaN takes over (the index of the last NaN), else the first of equal maxima */
    {"aten.max_pool2d_with_indices.default", "nan_ties", "T[2, 3, 9, A]",
     "%r = aten.round.default(%a)\n%m = aten.gt.Scalar(%a, 0.5)\n%nan = aten.full_like.default(%a, nan)\n"
     "%x = aten.where.self(%m, %nan, %r)\n"
     "%mp = aten.max_pool2d_with_indices.default(%x, [3, 3], [2, 2], [1, 1], [1, 1], True)\n%out = getitem(%mp, 0)\n"
     "%out1 = getitem(%mp, 1)\nreturn (%out, %out1)", DT_FL, 0},
    /* windows whose elements inside are all -inf: the index is the first inside, not padding */
    {"aten.max_pool2d_with_indices.default", "ninf_pad", "T[2, 3, 9, A]",
     "%m = aten.gt.Scalar(%a, -0.5)\n%ninf = aten.full_like.default(%a, -inf)\n%x = aten.where.self(%m, %ninf, %a)\n"
     "%mp = aten.max_pool2d_with_indices.default(%x, [3, 2], [2, 1], [1, 1], [2, 1], True)\n%out = getitem(%mp, 0)\n"
     "%out1 = getitem(%mp, 1)\nreturn (%out, %out1)", DT_FL, 0},
    {"aten.max_pool2d_with_indices.default", "3d", "T[3, 10, A]",
     "%mp = aten.max_pool2d_with_indices.default(%a, [2, 3], [3, 2], [1, 1], [2, 1], True)\n%out = getitem(%mp, 0)\n"
     "%out1 = getitem(%mp, 1)\nreturn (%out, %out1)", DT_FL | DT_I64, 0},
    /* relu fused into the pooling kernel's prologue */
    {"aten.max_pool2d_with_indices.default", "relu", "T[2, 3, 9, A]",
     "%r = aten.relu.default(%a)\n%mp = aten.max_pool2d_with_indices.default(%r, [3, 3], [2, 2], [1, 1])\n"
     "%out = getitem(%mp, 0)\n%out1 = getitem(%mp, 1)\nreturn (%out, %out1)", DT_FL | DT_I64, S},
    /* ceil_mode: the last window runs past the padded end, which the divisor leaves out */
    {"aten.avg_pool2d.default", "ceil", "T[2, 3, 8, A]", "%out = aten.avg_pool2d.default(%a, [3, 3], [2, 2], [1, 1], True)", DT_FL, 0},
    {"aten.avg_pool2d.default", "ceil_nopad", "T[2, 3, 8, A]", "%out = aten.avg_pool2d.default(%a, [3, 3], [2, 2], [0, 0], True)", DT_FL, 0},
    {"aten.avg_pool2d.default", "exclude_pad", "T[2, 3, 8, A]",
     "%out = aten.avg_pool2d.default(%a, [3, 3], [2, 2], [1, 1], False, False)", DT_FL, S},
    {"aten.avg_pool2d.default", "divisor", "T[2, 3, 8, A]",
     "%out = aten.avg_pool2d.default(%a, [3, 2], [2, 3], [1, 1], True, True, 5)", DT_FL, 0},
    {"aten.avg_pool2d.default", "3d", "T[3, 9, A]", "%out = aten.avg_pool2d.default(%a, [2, 3], [2, 2], [1, 1], True, False)", DT_FL, 0},
    /* integers divide rounding toward zero */
    {"aten.avg_pool2d.default", "int", "T[2, 3, 8, A]", "%out = aten.avg_pool2d.default(%a, [3, 3], [2, 2], [1, 1], True, False)", DT_I64, 0},
    {"aten.avg_pool2d.default", "relu", "T[2, 3, 8, A]",
     "%r = aten.relu.default(%a)\n%out = aten.avg_pool2d.default(%r, [2, 2], [2, 2])", DT_FL, S},
    {"aten.topk.default", "", "T[A, 12]",
     "%tk = aten.topk.default(%a, 4)\n%out = getitem(%tk, 0)\n%out1 = getitem(%tk, 1)\nreturn (%out, %out1)", DT_F32, S},
    {"aten.gather.default", "", "T[A, B] i64[A, C]<B", "%out = aten.gather.default(%a, 1, %b)", DT_NUM, S},
    {"aten.cumsum.default", "", "T[A, B]", "%out = aten.cumsum.default(%a, 1)", DT_ALL, S},
    {"aten.cumsum.default", "dim0", "T[A, B]", "%out = aten.cumsum.default(%a, 0)", DT_FL, 0},
    {"aten.cumsum.default", "f64", "T[A, B]", "%out = aten.cumsum.default(%a, -1, dtype=f64)", DT_F32, 0},
    {"aten.embedding.default", "", "T[A, B] i64[C, D]<A", "%out = aten.embedding.default(%a, %b)", DT_FL, S},
    {"aten.index.Tensor", "", "T[A, B] i64[C]<A", "%out = aten.index.Tensor(%a, [%b])", DT_ALL, S},
    {"aten.index.Tensor", "dim1", "T[A, B] i64[C]<B", "%out = aten.index.Tensor(%a, [None, %b])", DT_FL, 0},
    /* indexing as indirect loads: indices at both bounds (negative ones wrap for index.Tensor),
     * two index tensors broadcast together (adjacent: in place; apart: first), a consumer fused */
    {"aten.index.Tensor", "bounds", "T[A, B]", "%i = aten.arange.start_step(-$A, $A, 1)\n%out = aten.index.Tensor(%a, [%i])",
     DT_ALL, 0},
    {"aten.index.Tensor", "two", "T[A, B, C] i64[D, 1]<A i64[1, 3]<B", "%out = aten.index.Tensor(%a, [%b, %c])", DT_FL, 0},
    {"aten.index.Tensor", "apart", "T[A, B, C] i64[D, 1]<A i64[1, 3]<C", "%out = aten.index.Tensor(%a, [%b, None, %c])",
     DT_FL | DT_I64, 0},
    {"aten.embedding.default", "bounds", "T[A, B]", "%i = aten.arange.start_step(0, $A, 1)\n%out = aten.embedding.default(%a, %i)",
     DT_FL, 0},
    {"aten.embedding.default", "fused", "T[A, B] i64[C, D]<A T[B]",
     "%e = aten.embedding.default(%a, %b)\n%m = aten.mul.Tensor(%e, %c)\n%out = aten.sum.dim_IntList(%m, [-1])", DT_FL, S},
    {"aten.gather.default", "bounds", "T[A, B]",
     "%i = aten.arange.start_step(0, $B, 1)\n%u = aten.unsqueeze.default(%i, 0)\n%e = aten.expand.default(%u, [$A, -1])\n"
     "%out = aten.gather.default(%a, 1, %e)", DT_NUM, 0},
    {"aten.gather.default", "dim0", "T[A, B] i64[C, B]<A", "%out = aten.gather.default(%a, 0, %b)", DT_FL, 0},
    /* ---- scatters (core/lower_scatter.c). Plain scatters get distinct indices (a reversal
     * made with arange: both bounds, 0 and size - 1) since PyTorch leaves duplicates undefined;
     * the combining forms get random indices, duplicates included, and must combine every one */
#define REV_A "%r = aten.arange.start_step(0, $A, 1)\n%q = aten.rsub.Scalar(%r, $A)\n%i = aten.sub.Scalar(%q, 1)\n"
#define REV_B "%r = aten.arange.start_step(0, $B, 1)\n%q = aten.rsub.Scalar(%r, $B)\n%i = aten.sub.Scalar(%q, 1)\n"
    {"aten.scatter.src", "", "T[A, B] T[A, B]",
     REV_A "%u = aten.unsqueeze.default(%i, 1)\n%e = aten.expand.default(%u, [-1, $B])\n%out = aten.scatter.src(%a, 0, %e, %b)",
     DT_ALL, 0},
    {"aten.scatter.src", "dim-1", "T[A, B] T[A, B]",
     REV_B "%u = aten.unsqueeze.default(%i, 0)\n%e = aten.expand.default(%u, [$A, -1])\n%out = aten.scatter.src(%a, -1, %e, %b)",
     DT_FL | DT_I64, 0},
    {"aten.scatter.src", "part", "T[A, B] T[A, B]", /* index [2, B], smaller than src and self */
     "%i = aten.arange.start_step(0, 2, 1)\n%u = aten.unsqueeze.default(%i, 1)\n%e = aten.expand.default(%u, [-1, $B])\n"
     "%out = aten.scatter.src(%a, 0, %e, %b)", DT_FL, 0},
    {"aten.scatter.value", "", "T[A, B]",
     REV_A "%u = aten.unsqueeze.default(%i, 1)\n%e = aten.expand.default(%u, [-1, $B])\n%out = aten.scatter.value(%a, 0, %e, 3)",
     DT_NUM, 0},
    {"aten.scatter_add.default", "", "T[A, B] i64[C, B]<A T[C, B]", "%out = aten.scatter_add.default(%a, 0, %b, %c)", DT_NUM, S | L},
    {"aten.scatter_add.default", "dim-1", "T[A, B] i64[A, D]<B T[A, D]", "%out = aten.scatter_add.default(%a, -1, %b, %c)",
     DT_FL | DT_I64, 0},
    {"aten.scatter_add.default", "many", "T[C, B] i64[A, B]<C T[A, B]", /* large: a million adds onto 3 rows */
     "%out = aten.scatter_add.default(%a, 0, %b, %c)", DT_F32 | DT_I64, L},
    {"aten.scatter_add.default", "size1", "T[A, 1] i64[C, 1]<A T[C, 1]", "%out = aten.scatter_add.default(%a, 0, %b, %c)",
     DT_F32, 0},
    {"aten.scatter_add.default", "fused", "T[A, B] i64[C, B]<A T[C, B]",
     "%x = aten.mul.Scalar(%a, 2)\n%s = aten.scatter_add.default(%x, 0, %b, %c)\n%out = aten.relu.default(%s)", DT_FL, S},
    {"aten.scatter_add.default", "chain", "T[A, B] i64[C, B]<A T[C, B]",
     "%s = aten.scatter_add.default(%a, 0, %b, %c)\n%t = aten.scatter_add.default(%s, 0, %b, %c)\n"
     "%n = aten.neg.default(%c)\n%out = aten.scatter_add.default(%t, 0, %b, %n)", DT_FL | DT_I64, 0},
    {"aten.scatter_reduce.two", "sum", "T[A, B] i64[C, B]<A T[C, B]", "%out = aten.scatter_reduce.two(%a, 0, %b, %c, 'sum')",
     DT_NUM, S},
    {"aten.scatter_reduce.two", "sum_noself", "T[A, B] i64[C, B]<A T[C, B]",
     "%out = aten.scatter_reduce.two(%a, -2, %b, %c, 'sum', include_self=False)", DT_NUM, 0},
    {"aten.scatter_reduce.two", "prod", "T[A, B] i64[C, B]<A T[C, B]", "%out = aten.scatter_reduce.two(%a, 0, %b, %c, 'prod')",
     DT_NUM, 0},
    {"aten.scatter_reduce.two", "prod_noself", "T[A, B] i64[C, B]<A T[C, B]",
     "%out = aten.scatter_reduce.two(%a, 0, %b, %c, 'prod', include_self=False)", DT_NUM, 0},
    {"aten.scatter_reduce.two", "mean", "T[A, B] i64[C, B]<A T[C, B]", "%out = aten.scatter_reduce.two(%a, 0, %b, %c, 'mean')",
     DT_NUM, S},
    {"aten.scatter_reduce.two", "mean_noself", "T[A, B] i64[C, B]<A T[C, B]",
     "%out = aten.scatter_reduce.two(%a, 0, %b, %c, 'mean', include_self=False)", DT_NUM, 0},
    {"aten.scatter_reduce.two", "amax", "T[A, B] i64[C, B]<A T[C, B]", "%out = aten.scatter_reduce.two(%a, 0, %b, %c, 'amax')",
     DT_NUM, 0},
    {"aten.scatter_reduce.two", "amax_noself", "T[A, B] i64[A, D]<B T[A, D]",
     "%out = aten.scatter_reduce.two(%a, 1, %b, %c, 'amax', include_self=False)", DT_NUM, 0},
    {"aten.scatter_reduce.two", "amin", "T[A, B] i64[C, B]<A T[C, B]", "%out = aten.scatter_reduce.two(%a, 0, %b, %c, 'amin')",
     DT_NUM, 0},
    {"aten.scatter_reduce.two", "amin_noself", "T[A, B] i64[C, B]<A T[C, B]",
     "%out = aten.scatter_reduce.two(%a, 0, %b, %c, 'amin', include_self=False)", DT_NUM, 0},
    {"aten.index_put.default", "", "T[A, B] T[A, B]", REV_A "%out = aten.index_put.default(%a, [%i], %b)", DT_ALL, 0},
    {"aten.index_put.default", "neg", "T[A, B] T[A, B]", /* negative indices count from the end */
     "%i = aten.arange.start_step(-$A, 0, 1)\n%out = aten.index_put.default(%a, [%i], %b)", DT_FL, 0},
    {"aten.index_put.default", "acc", "T[A, B] i64[C]<A T[C, B]", "%out = aten.index_put.default(%a, [%b], %c, True)",
     DT_NUM, S | L},
    {"aten.index_put.default", "acc_bcast", "T[A, B] i64[C]<A T[B]", "%out = aten.index_put.default(%a, [%b], %c, True)",
     DT_FL, 0},
    {"aten.index_put.default", "acc_two", "T[A, B, C] i64[D, 1]<A i64[1, 3]<B T[D, 3, C]",
     "%out = aten.index_put.default(%a, [%b, %c], %d, True)", DT_F32 | DT_I64, 0},
    {"aten.index_put.default", "acc_dim1", "T[A, B] i64[C]<B T[A, C]",
     "%out = aten.index_put.default(%a, [None, %b], %c, accumulate=True)", DT_FL, 0},
    {"aten.embedding_dense_backward.default", "", "T[C, D, B] i64[C, D]<A",
     "%out = aten.embedding_dense_backward.default(%a, %b, $A, -1, False)", DT_FL, 0},
    {"aten.embedding_dense_backward.default", "pad_freq", "T[C, D, B] i64[C, D]<A",
     "%out = aten.embedding_dense_backward.default(%a, %b, $A, 1, True)", DT_FL, 0},
    {"aten.select_scatter.default", "", "T[A, B] T[A]", "%out = aten.select_scatter.default(%a, %b, 1, -1)", DT_ALL, S},
    {"aten.select_scatter.default", "dim0", "T[A, B] T[B]", "%out = aten.select_scatter.default(%a, %b, 0, 0)", DT_FL, 0},
    {"aten.slice_scatter.default", "", "T[A, B] T[A, 3]", "%out = aten.slice_scatter.default(%a, %b, 1, 1, 7, 2)", DT_ALL, S},
    {"aten.slice_scatter.default", "neg", "T[A, B] T[2, B]", "%out = aten.slice_scatter.default(%a, %b, 0, -2)", DT_FL, 0},
    {"aten.masked_scatter.default", "", "T[A, B] bool[A, B] T[A, B]", "%out = aten.masked_scatter.default(%a, %b, %c)",
     DT_ALL, 0},
    {"aten.masked_scatter.default", "bcast", "T[A, B] bool[B] T[A, B]", /* the mask broadcast over rows */
     "%out = aten.masked_scatter.default(%a, %b, %c)", DT_FL | DT_I64, 0},
    {"aten.masked_scatter.default", "fused", "T[A, B] T[A, B] T[C, A, B]", /* mask computed; source larger */
     "%m = aten.gt.Scalar(%b, 0)\n%out = aten.masked_scatter.default(%a, %m, %c)", DT_FL, 0},
    /* in-place overloads: later reads of the name written see the new values; a graph input
     * written in place is copied back; a write into a slice lands in its base */
    {"aten.index_put_.default", "", "T[A, B] i64[C]<A T[C, B]",
     "%x = aten.mul.Scalar(%a, 2)\n%r = aten.index_put_.default(%x, [%b], %c, True)\n%s = aten.index_put_.default(%x, [%b], %c, True)\n"
     "%out = aten.add.Tensor(%x, %r)", DT_FL | DT_I64, NV},
    {"aten.index_put_.default", "input", "T[A, B] i64[C]<A T[C, B]",
     "%r = aten.index_put_.default(%a, [%b], %c, True)\n%out = aten.neg.default(%a)", DT_F32, NV},
    {"aten.scatter_add_.default", "", "T[A, B] i64[C, B]<A T[C, B]",
     "%r = aten.scatter_add_.default(%a, 0, %b, %c)\n%out = aten.mul.Tensor(%a, %r)", DT_NUM, NV},
    {"aten.copy_.default", "slice", "T[A, B] T[A, 2]",
     "%s = aten.slice.Tensor(%a, 1, 1, 3)\n%c = aten.copy_.default(%s, %b)\n%out = aten.relu.default(%a)", DT_ALL & ~DT_BOOL, NV},
    {"aten.copy_.default", "select", "T[A, B] T[1]",
     "%x = aten.clone.default(%a)\n%s = aten.select.int(%x, 0, -1)\n%c = aten.copy_.default(%s, %b)\n%out = aten.add.Tensor(%x, %a)",
     DT_FL | DT_I64, 0},
#undef REV_A
#undef REV_B
};

#endif
