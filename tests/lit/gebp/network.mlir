// RUN: %python %S/../../zoo_cli.py build ds_cnn --small -o %t.onnx
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena | filecheck %s --check-prefix=IR2
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512 --lower-gebp --plan-arena | filecheck %s --check-prefix=IR512
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=C2
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512 --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=C512

// The pipeline on a network (DS-CNN, small): every matrix-product band of the
// plan carries its register tile (gebp-tile) and its kernel decisions
// (lower-gebp) in the IR, and the C is printed from them. The first
// convolution (10x4, stride 2, one input channel: an im2col GEBP of k = 40)
// and the pointwise ones (k = 16) have n = 16 output channels: on AVX2 a
// 4 x 2 tile of 8 lanes, on AVX-512 a 4 x 1 tile of 16 lanes.

// IR2:      loop.band
// IR2:        nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn2 lanes8>, {{.*}}rtile.target = "avx2", rtile.kernel = #rtile.kernel<fma kp 40 kc 40 mc 64 scratch 10240>, kernel = array<i64: 10, 4>
// IR2:      loop.band
// IR2:        nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn2 lanes8>, {{.*}}rtile.kernel = #rtile.kernel<fma kp 16 kc 16 mc 64 scratch 0>, kernel = array<i64: 1, 1>

// IR512:    nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn1 lanes16>, {{.*}}rtile.target = "avx512", rtile.kernel = #rtile.kernel<fma kp 40 kc 40 mc 64 scratch 10240>, kernel = array<i64: 10, 4>

// The C: vector types of the tile's width, guarded by the unit's ISA macro,
// and micro-kernels of the tile's rows x vectors.
// C2:       #if defined(TIGRIS_VECTOR) && (defined(__AVX__))
// C2-NEXT:  #define TG_V8 1
// C2:       void tg_fmk8_4x2_8(
// C2:         tg_v8 c0_0, c0_1, c1_0, c1_1, c2_0, c2_1, c3_0, c3_1;
// C2:       static void tg_fgebp_40x16(
// C2:         for (int k0 = 0; k0 < 40; k0 += 40) {
// C2:             tg_fmk8_4x2_8(a + (long)i * lda + k0,
// C2-NOT:   tg_fmk16_

// C512:     #if defined(TIGRIS_VECTOR) && (defined(__AVX512F__))
// C512-NEXT: #define TG_V16 1
// C512:     void tg_fmk16_4x1_16(
// C512:       tg_v16 c0_0, c1_0, c2_0, c3_0;
// C512:     static void tg_fgebp_40x16(
// C512:           tg_fmk16_4x1_16(a + (long)i * lda + k0,
