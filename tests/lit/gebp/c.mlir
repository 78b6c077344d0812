// RUN: tigris-opt %s --gebp-tile=target=avx2 --lower-gebp -t c | filecheck %s
// RUN: tigris-opt %s --gebp-tile=target=avx2 --lower-gebp | xdsl-opt -t c | filecheck %s

// The C target prints the lowered kernels with the practices of gebp_c: every
// accumulator a named variable, an empty asm barrier after each B load and A
// splat, partial vectors through a zeroed copy, int8 through widening
// intrinsics (pmaddwd on AVX2, vpdpwssd where rtile.target has VNNI).

// CHECK:      typedef float vf8 __attribute__((vector_size(32)));
// CHECK:      #define KEEP32(x) __asm__("" : "+v"(x))
// CHECK:      void f(const float *restrict a, const float *restrict b, const float *restrict c, float *restrict y);
// CHECK:      static void gebp_13x19x9_f32_rm4rn2l8_c19(const float *restrict A, const float *restrict B, const float *restrict C, float *restrict Y);

// CHECK-LABEL: void f(const float *restrict a, const float *restrict b, const float *restrict c, float *restrict y){{$}}
// CHECK-NEXT: {
// CHECK-NEXT:   gebp_13x19x9_f32_rm4rn2l8_c19(a, b, c, y);
// CHECK-NEXT: }

// CHECK:      /* #rtile.geom<rm4 rn2 lanes8> #rtile.cover<m_full 12 n_full 16 tail [3] band 1> for avx2: gcc -O3 -mavx2 -mfma */
// CHECK-NEXT: static void gebp_13x19x9_f32_rm4rn2l8_c19(
// CHECK:          for (ptrdiff_t j0 = 0; j0 < 16; j0 += 16) {
// CHECK-NEXT:       for (ptrdiff_t i0 = 0; i0 < 12; i0 += 4) {
// CHECK:              vf8 r0c0 = cin0c0;
// CHECK-NEXT:         vf8 r0c1 = cin0c1;
// CHECK-NEXT:         vf8 r1c0 = cin0c0;
// CHECK:              vf8 r3c1 = cin0c1;
// CHECK-NEXT:         #pragma GCC unroll 2
// CHECK-NEXT:         for (ptrdiff_t k = 0; k < 9; k += 1) {
// CHECK-NEXT:           vf8 b0 = *(const vf8u *)(&B[k * 19 + j0]);
// CHECK-NEXT:           KEEP32(b0);
// CHECK-NEXT:           vf8 b1 = *(const vf8u *)(&B[k * 19 + (j0 + 8)]);
// CHECK-NEXT:           KEEP32(b1);
// CHECK-NEXT:           float a0 = A[i0 * 9 + k];
// CHECK-NEXT:           vf8 s0 = ((vf8){a0, a0, a0, a0, a0, a0, a0, a0});
// CHECK-NEXT:           KEEP32(s0);
// CHECK-NEXT:           r0c0 = s0 * b0 + r0c0;
// CHECK-NEXT:           r0c1 = s0 * b1 + r0c1;
// CHECK:                r3c1 = s3 * b1 + r3c1;
// CHECK-NEXT:         }
// CHECK-NEXT:         *(vf8u *)(&Y[i0 * 19 + j0]) = r0c0;
// The partial tail vector: zeros past its 3 lanes on load, 3 lanes stored.
// CHECK:              { float t_[8] __attribute__((aligned(64))) = {0}; memcpy(t_, &B[k_1 * 19 + 16], 12); b0_1 = *(const vf8u *)t_; }
// CHECK-NEXT:         KEEP32(b0_1);
// CHECK:            { float t_[8] __attribute__((aligned(64))); *(vf8u *)t_ = r0c0_1; memcpy(&Y[i0_1 * 19 + 16], t_, 12); }
func.func @f(%a: tensor<13x9xf32>, %b: tensor<9x19xf32>, %c: tensor<19xf32>) -> tensor<13x19xf32> {
  %y = nn.gemm %a, %b, %c : (tensor<13x9xf32>, tensor<9x19xf32>, tensor<19xf32>) -> tensor<13x19xf32>
  func.return %y : tensor<13x19xf32>
}

// CHECK-LABEL: static void gebp_7x21x5_i8_rm4rn2l8(const int8_t *restrict A, const int8_t *restrict B, int32_t *restrict Y){{$}}
// CHECK:          __m256i r0c0 = _mm256_setzero_si256();
// CHECK:          for (ptrdiff_t k = 0; k < 4; k += 2) {
// CHECK-NEXT:       __m128i b0 = _mm_loadl_epi64((const __m128i *)(&B[k * 21 + j0]));
// CHECK-NEXT:       __m128i b0_1 = _mm_loadl_epi64((const __m128i *)(&B[(k + 1) * 21 + j0]));
// CHECK:            __m256i wb0_b0_1 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(b0, b0_1));
// CHECK-NEXT:       KEEP32(wb0_b0_1);
// CHECK-NEXT:       __m256i a0w = _mm256_set1_epi32(_mm_cvtsi128_si32(_mm_cvtepi8_epi16(a0)));
// CHECK-NEXT:       KEEP32(a0w);
// CHECK-NEXT:       r0c0 = _mm256_add_epi32(r0c0, _mm256_madd_epi16(a0w, wb0_b0_1));
// The odd last k step pairs B with zeros.
// CHECK:          __m256i wb0_2 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(b0_2, _mm_setzero_si128()));
// CHECK:          _mm256_storeu_si256((void *)(&Y[i0 * 21 + j0]), r0c0_1);
func.func @g(%a: tensor<7x5xi8>, %b: tensor<5x21xi8>) -> tensor<7x21xi32> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 4 n_full 16 tail [5] band 3> {rtile.target = "avx2"} : tensor<7x5xi8>, tensor<5x21xi8> -> tensor<7x21xi32>
  func.return %c : tensor<7x21xi32>
}

// CHECK-LABEL: static void gebp_8x32x4_i8_rm4rn2l16(const int8_t *restrict A, const int8_t *restrict B, int32_t *restrict Y){{$}}
// CHECK:            __m512i wb0_b0_1 = _mm512_cvtepi8_epi16(
// CHECK:            r0c0 = _mm512_dpwssd_epi32(r0c0, a0w, wb0_b0_1);
// CHECK-NOT:        _madd_epi16
func.func @v(%a: tensor<8x4xi8>, %b: tensor<4x32xi8>) -> tensor<8x32xi32> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes16> cover <m_full 8 n_full 32 tail [] band 0> {rtile.target = "avx512-vnni"} : tensor<8x4xi8>, tensor<4x32xi8> -> tensor<8x32xi32>
  func.return %c : tensor<8x32xi32>
}
