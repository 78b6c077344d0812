// RUN: %python %S/../../zoo_cli.py build ds_cnn --small -o %t.onnx
// RUN: %python %S/../../zoo_cli.py build ds_cnn --small --int8 -o %t8.onnx
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena | filecheck %s --check-prefix=IR2
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512 --lower-gebp --plan-arena | filecheck %s --check-prefix=IR512
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=C2
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512 --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=C512
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2,geometry=rm2-rn2-lanes8 --lower-gebp --plan-arena 2>%t.err | filecheck %s --check-prefix=IRG
// RUN: filecheck %s --check-prefix=WARN < %t.err
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2,geometry=rm2-rn2-lanes8 --lower-gebp --plan-arena -t c 2>/dev/null | filecheck %s --check-prefix=CG
// RUN: tigris-opt %t8.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx2 --lower-gebp --plan-arena | filecheck %s --check-prefix=IR8

// The pipeline on a network (DS-CNN, small): every matrix-product band of the
// plan carries its register tile (gebp-tile) and, beside its op, its
// register-tiled kernel as rtile ops (lower-gebp): the row blocks, the packing
// or im2col gathering of A with its scratch, the K blocks, the panel sweep and
// its micro-tile with the row edge tiles, the column tail, the epilogue. The C
// is printed from those ops. The first convolution (10x4, stride 2, one input
// channel: an im2col GEBP of k = 40) and the pointwise ones (k = 16) have
// n = 16 output channels: on AVX2 a 4 x 2 tile of 8 lanes, on AVX-512 a 4 x 1
// tile of 16 lanes, whose four accumulators are half the eight FMAs AVX-512
// keeps in flight: its micro-tile runs two row passes at once (8 rows). The
// final Gemm (1 x 12) is one row of an 8-lane panel and a column tail of 4 lanes.

// IR2:      loop.band
// IR2:        %[[C0:.*]] = nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn2 lanes8>, {{.*}}rtile.target = "avx2", kernel = array<i64: 10, 4>
// IR2-NEXT:   rtile.kernel %[[C0]] dot "fma" k 40 n 16 groups 1 : tensor<1x25x5x16xf32> {
// IR2-NEXT:     rtile.row_blocks rows 64 {
// IR2-NEXT:       rtile.pack_a "im2col" kp 40 into f32 scratch 10240
// IR2-NEXT:       rtile.k_blocks k 40 step 40 {
// IR2-NEXT:         rtile.panels cols 0 to 16 width 16 {
// IR2-NEXT:           rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
// IR2-NEXT:         }
// IR2-NEXT:       }
// IR2-NEXT:     }
// IR2-NEXT:     rtile.epilogue "bias"
// IR2-NEXT:   }
// IR2-NEXT:   loop.yield %[[C0]]
// IR2:        %[[PW:.*]] = nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn2 lanes8>, {{.*}}kernel = array<i64: 1, 1>
// IR2-NEXT:   rtile.kernel %[[PW]] dot "fma" k 16 n 16 groups 1
// IR2-NEXT:     rtile.row_blocks rows 64 merge 5 {
// IR2-NEXT:       rtile.k_blocks k 16 step 16 {
// IR2-NEXT:         rtile.panels cols 0 to 16 width 16 {
// IR2-NEXT:           rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
// IR2:        %[[G:.*]] = nn.gemm {{.*}}rtile.geom = #rtile.geom<rm1 rn1 lanes8>
// IR2-NEXT:   rtile.kernel %[[G]] dot "fma" k 16 n 12 groups 1
// IR2:            rtile.panels cols 0 to 8 width 8 {
// IR2-NEXT:         rtile.micro <rm1 rn1 lanes8> last 8 edges [] unroll 1
// IR2:            rtile.panels cols 8 to 12 width 8 {
// IR2-NEXT:         rtile.micro <rm1 rn1 lanes8> last 4 edges [] unroll 1

// IR512:      nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn1 lanes16>, {{.*}}rtile.target = "avx512", kernel = array<i64: 10, 4>
// IR512-NEXT: rtile.kernel %{{.*}} dot "fma" k 40 n 16 groups 1
// IR512:          rtile.panels cols 0 to 16 width 16 {
// IR512-NEXT:       rtile.micro <rm8 rn1 lanes16> last 16 edges [1, 2, 3, 4, 5, 6, 7] unroll 4
// IR512-NOT:  lanes8> last 8 edges [1, 2, 3]

// The C: vector types of the tile's width, guarded by the unit's ISA macro,
// micro-kernels of the tile's rows x vectors, the K-block loop, the panel
// loop, the full-row passes and one case per edge tile.
// C2:       #if defined(TIGRIS_VECTOR) && (defined(__AVX__))
// C2-NEXT:  #define TG_V8 1
// C2:       void tg_fmk8_4x2_8(
// C2:         tg_v8 c0_0, c0_1, c1_0, c1_1, c2_0, c2_1, c3_0, c3_1;
// C2:       static void tg_fgebp_40x16(
// C2:         for (int k0 = 0; k0 < 40; k0 += 40) {
// C2:           for (int j0 = 0; j0 < 16; j0 += 16) {
// C2:             for (; i + 4 <= m; i += 4)
// C2-NEXT:          tg_fmk8_4x2_8(a + (long)i * lda + k0,
// C2:             case 3: tg_fmk8_3x2_8(
// C2-NOT:   tg_fmk16_

// C512:     #if defined(TIGRIS_VECTOR) && (defined(__AVX512F__))
// C512-NEXT: #define TG_V16 1
// C512:     void tg_fmk16_8x1_16(
// C512:       tg_v16 c0_0, c1_0, c2_0, c3_0, c4_0, c5_0, c6_0, c7_0;
// C512:     static void tg_fgebp_40x16(
// C512:           for (; i + 8 <= m; i += 8)
// C512-NEXT:        tg_fmk16_8x1_16(a + (long)i * lda + k0,

// A geometry asked of gebp-tile (geometry=rm2-rn2-lanes8) is every site's
// tile where the spec's check accepts it, and declined with the rule where
// not (the one-row Gemm keeps the default); IR and C follow.
// WARN:     warning: gebp-tile: 'nn.gemm' in @main {{.*}}: declined the requested geometry rm2 rn2 lanes8 of this gemm (1x12x16): rows-fit: {{.*}} rm=2 exceeds the row extent m=1; falls back to the default rm1 rn1 lanes8
// IRG:      nn.conv {{.*}}rtile.geom = #rtile.geom<rm2 rn2 lanes8>, {{.*}}kernel = array<i64: 10, 4>
// IRG-NEXT: rtile.kernel
// IRG:            rtile.micro <rm2 rn2 lanes8> last 8 edges [1] unroll 1
// IRG:      nn.gemm {{.*}}rtile.geom = #rtile.geom<rm1 rn1 lanes8>
// CG:       void tg_fmk8_2x2_8(
// CG:       static void tg_fgebp_40x16(
// CG:             for (; i + 2 <= m; i += 2)
// CG-NEXT:          tg_fmk8_2x2_8(
// CG-NEXT:        switch (m - i) {
// CG-NEXT:        case 1: tg_fmk8_1x2_8(
// CG-NOT:   tg_fmk8_4x2_8

// int8: the rows packed (pointwise) or gathered (im2col) as int16 x - zp,
// pmaddwd on AVX2, no K blocks, a requantizing epilogue.
// IR8:      rtile.kernel %{{.*}} dot "pmaddwd" k 40 n 16 groups 1
// IR8-NEXT:   rtile.row_blocks rows 64 {
// IR8-NEXT:     rtile.pack_a "im2col" kp 40 into i16 scratch 5120
// IR8-NEXT:     rtile.panels cols 0 to 16 width 16 {
// IR8-NEXT:       rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
// IR8:          rtile.epilogue "bias_requant"
// IR8:      rtile.kernel %{{.*}} dot "pmaddwd" k 16 n 16 groups 1
// IR8-NEXT:   rtile.row_blocks rows 64 merge 5 {
// IR8-NEXT:     rtile.pack_a "rows" kp 16 into i16 scratch 2048
