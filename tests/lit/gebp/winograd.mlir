// RUN: %python %S/../../zoo_cli.py build resnet --small -o %t.onnx
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=zen4 --lower-gebp --plan-arena -o %t.mlir
// RUN: filecheck %s --check-prefix=IR < %t.mlir
// RUN: tigris-opt %t.mlir -t c | filecheck %s --check-prefix=C
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=cortex-m7 --lower-gebp --plan-arena | filecheck %s --check-prefix=M7
// RUN: sed -e 's/rtile.pack_a "window" kp 72 into f32/rtile.pack_a "winograd" kp 72 into f32/' %t.mlir > %t.bad.mlir
// RUN: not tigris-opt %t.bad.mlir -t c 2>&1 | filecheck %s --check-prefix=BAD

// A float32 convolution of one group, three taps wide at stride and dilation
// 1 along the width, of at least 8 input channels, runs Winograd's F(4, 3)
// along the width (lower-gebp's `winograd` packing): six products, each of
// the kernel rows' channels (k = 3 x 8 = 24, not the 72 of the direct
// product), whose row blocks of 16 tiles of four pixels hold six transformed
// rows of 24 and six results of 8 columns in the scratch (16 x 6 x (24 + 8) x
// 4 bytes). The stem (3 input channels) keeps its gathered im2col rows, the
// stride-2 convolutions their window kernels.

// IR:      rtile.kernel %{{.*}} dot "fma" k 27 n 8 groups 1
// IR-NEXT:   rtile.row_blocks rows {{[0-9]+}} {
// IR-NEXT:     rtile.pack_a "im2col" kp 27 into f32
// IR:      rtile.kernel %{{.*}} dot "fma" k 24 n 8 groups 1
// IR-NEXT:   rtile.row_blocks rows 16 {
// IR-NEXT:     rtile.pack_a "winograd" kp 24 into f32 scratch 12288
// IR-NEXT:     rtile.k_blocks k 24 step 24 {
// IR:        rtile.epilogue "bias_clamp" lo 0.000000e+00 : f32
// IR:      nn.conv {{.*}}strides = array<i64: 2, 2>
// IR-NEXT: rtile.kernel %{{.*}} dot "fma" k 72 n 16 groups 1
// IR-NEXT:   rtile.row_blocks rows {{[0-9]+}} {
// IR-NEXT:     rtile.pack_a "window" kp 72 into f32
// IR:      rtile.kernel %{{.*}} dot "fma" k 48 n 16 groups 1
// IR-NEXT:   rtile.row_blocks rows {{[0-9]+}} {
// IR-NEXT:     rtile.pack_a "winograd" kp 48 into f32

// In the C, per output row the kernel rows inside the image (consecutive: ky0
// and ns), per row block each tile's six pixels of each such row (zc, zeros,
// outside the image or the band) through B^T into the buffer, the six
// products by the GEBP sweep over B's rows ky0 * c .. (ky0 + ns) * c of each
// transformed weight matrix (from zero: zc), then per tile A^T, the bias and
// the fused Relu, storing the pixels inside the band (nq of the four).
// C:      static void [[GEBP:tg_fwgebp_24x8]](const float *restrict a, long lda, int m,
// C:        const int first = 1;
// C:      static TIGRIS_BAND void [[CONV:tg_wconv_3x3_8_8]](const float *restrict x, const int *restrict xb, const float *restrict bp, const float *restrict bias, const float *restrict zc, float *restrict y, const int *restrict yb)
// C:        float buf[3072] __attribute__((aligned(64)));
// C:            if (rok[ky]) { if (ky0 < 0) ky0 = ky; ++ns; }
// C:          for (int ox0 = yl2; ox0 < yl2 + yn2; ox0 += 64) {
// C-NEXT:       const int left = yl2 + yn2 - ox0;
// C-NEXT:       const int nt = left >= 64 ? 16 : (left + 3) / 4;
// C:                  ? row + (long)(ix - xl2) * 8 : zc;
// C:                v[0 * 384 + ci] = 0x1.0000000000000p+2f * d0 - 0x1.4000000000000p+2f * d2 + d4;
// C:                v[5 * 384 + ci] = 0x1.0000000000000p+2f * d1 - 0x1.4000000000000p+2f * d3 + d5;
// C:            for (int j = 0; j < 6; ++j)
// C-NEXT:         [[GEBP]](buf + (long)j * 384, 24, nt, bp + (long)j * 192, zc, mb + (long)j * 128, 8, ky0 * 8, ns * 8);
// C:              float o3 = mp[1 * 128 + co] - mp[2 * 128 + co] + 0x1.0000000000000p+3f * mp[3 * 128 + co] - 0x1.0000000000000p+3f * mp[4 * 128 + co] + mp[5 * 128 + co];
// C:              if (nq > 3) yp[3 * 8 + co] = ((o3 + bias[co]) < 0x0.0p+0f ? 0x0.0p+0f : (o3 + bias[co]));
// C:      #else
// C:              [[CONV]](

// A Cortex-M target has no float vector unit: its float32 convolutions keep
// their direct kernels.
// M7-NOT: "winograd"

// A Winograd kernel stated on a convolution it cannot run (here stride 2)
// is refused by the C printer, naming the rule.
// BAD: tigris-opt: error: nn.conv: its rtile.kernel runs Winograd's F(4, 3) along the width, which takes one group and 3 taps at stride and dilation 1 (got 1 group(s), 3 taps, stride 2, dilation 1)
