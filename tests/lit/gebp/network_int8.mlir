// RUN: %python %S/../../zoo_cli.py build ds_cnn --small --int8 -o %t.onnx
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512 --lower-gebp --plan-arena | filecheck %s --check-prefix=IR512
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512-vnni --lower-gebp --plan-arena | filecheck %s --check-prefix=IRVNNI
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512 --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=C512
// RUN: tigris-opt %t.onnx --tile-stages=budget=64K --fuse-chains --backprop-heights --lower-to-loops --gebp-tile=target=avx512-vnni --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=CVNNI

// The int8 DS-CNN (small): the int8 dot-product instruction is the target's.
// AVX-512 without VNNI multiplies int16 pairs (pmaddwd, eight int32 lanes);
// with VNNI u8 x s8 groups of four k steps (vpdpbusd, sixteen lanes): the
// first convolution's k = 40 is ten groups, its rows are packed as unsigned
// bytes (int8 + 128) and the taps outside the image hold the zero point's byte.

// IR512:      nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn2 lanes8>, {{.*}}rtile.target = "avx512", kernel = array<i64: 10, 4>
// IR512-NEXT: rtile.kernel %{{.*}} dot "pmaddwd" k 40 n 16 groups 1
// IR512-NEXT:   rtile.row_blocks rows 64 {
// IR512-NEXT:     rtile.pack_a "im2col" kp 40 into i16 scratch 5120
// IR512-NEXT:     rtile.panels cols 0 to 16 width 16 {
// IR512-NEXT:       rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
// IRVNNI:      nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn1 lanes16>, {{.*}}rtile.target = "avx512-vnni", kernel = array<i64: 10, 4>
// IRVNNI-NEXT: rtile.kernel %{{.*}} dot "vpdpbusd" k 40 n 16 groups 1
// IRVNNI-NEXT:   rtile.row_blocks rows 64 {
// IRVNNI-NEXT:     rtile.pack_a "im2col" kp 40 into ui8 offset 139 scratch 2560
// IRVNNI-NEXT:     rtile.panels cols 0 to 16 width 16 {
// IRVNNI-NEXT:       rtile.micro <rm4 rn1 lanes16> last 16 edges [1, 2, 3] unroll 4
// IRVNNI:      nn.conv {{.*}}kernel = array<i64: 1, 1>
// IRVNNI-NEXT: rtile.kernel %{{.*}} dot "vpdpbusd" k 16 n 16 groups 1
// IRVNNI-NEXT:   rtile.row_blocks rows 64 merge 5 {
// IRVNNI-NEXT:     rtile.pack_a "rows" kp 16 into ui8 offset 0 scratch 1024

// C512:     void tg_imk_4x2_8(
// C512:       c0_0 = _mm256_add_epi32(c0_0, _mm256_madd_epi16(s0, b0));
// C512-NOT: _dpbusd_epi32

// CVNNI:    #define TG_VNNI 1
// CVNNI:    void tg_vmk16_4x1_16(
// CVNNI:      for (int q = 0; q < kq; ++q) {
// CVNNI-NEXT:   const int8_t *bq = b + (long)q * 64;
// CVNNI:        c0_0 = _mm512_dpbusd_epi32(c0_0, s0, b0);
// CVNNI:    static void tg_vgebp_40x16(
// CVNNI:      tg_vmk16_4x1_16(a + (long)i * 40, 40, b, y + (long)i * ldy + j0, ldy, 10,
// CVNNI:    memset(dt, {{[0-9]+}}, 1 * sizeof(*dt));
// CVNNI:    dt[ci] = (uint8_t)(s[ci] ^ 0x80);
// CVNNI-NOT: _madd_epi16(s
