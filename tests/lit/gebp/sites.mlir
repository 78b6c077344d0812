// RUN: tigris-opt %s --gebp-tile=target=avx512 | filecheck %s --check-prefix=AVX512
// RUN: tigris-opt %s --gebp-tile=target=avx2 | filecheck %s --check-prefix=AVX2
// RUN: tigris-opt %s --gebp-tile=target=zen4 | filecheck %s --check-prefix=ZEN4
// RUN: tigris-opt %s --gebp-tile=target=avx2 | tigris-opt --gebp-tile=target=avx2 | filecheck %s --check-prefix=AVX2

// Every kind of matrix product gets register_tile.default for its m x n site:
// gemm and matmul directly, a 1x1 conv with m = N*H*W pixels, n = Cout, k = Cin,
// a 3x3 conv as an implicit GEMM (k = 3*3*Cin); a depthwise conv is left alone.
// Running the pass twice changes nothing. On zen4 (AVX-512 whose FMA works on
// 256-bit halves) the float sites are fitted to 8-lane vectors of its 32
// registers.

// AVX512-LABEL: func.func @gemm
// AVX512: nn.gemm {{.*}}rtile.geom = #rtile.geom<rm4 rn3 lanes16>, rtile.cover = #rtile.cover<m_full 96 n_full 48 tail [16, 16, 3] band 1>, rtile.target = "avx512"
// AVX2-LABEL: func.func @gemm
// AVX2: nn.gemm {{.*}}rtile.geom = #rtile.geom<rm4 rn3 lanes8>, rtile.cover = #rtile.cover<m_full 96 n_full 72 tail [8, 3] band 1>, rtile.target = "avx2"
// ZEN4-LABEL: func.func @gemm
// ZEN4: nn.gemm {{.*}}rtile.geom = #rtile.geom<rm4 rn6 lanes8>, rtile.cover = #rtile.cover<m_full 96 n_full 48 tail [8, 8, 8, 8, 3] band 1>, rtile.target = "zen4"
func.func @gemm(%a: tensor<97x61xf32>, %b: tensor<61x83xf32>, %c: tensor<83xf32>) -> tensor<97x83xf32> {
  %y = nn.gemm %a, %b, %c : (tensor<97x61xf32>, tensor<61x83xf32>, tensor<83xf32>) -> tensor<97x83xf32>
  func.return %y : tensor<97x83xf32>
}

// AVX512-LABEL: func.func @matmul
// AVX512: nn.matmul {{.*}}rtile.geom = #rtile.geom<rm4 rn3 lanes16>, rtile.cover = #rtile.cover<m_full 40 n_full 48 tail [16, 6] band 0>
// AVX2-LABEL: func.func @matmul
// AVX2: nn.matmul {{.*}}rtile.geom = #rtile.geom<rm4 rn3 lanes8>, rtile.cover = #rtile.cover<m_full 40 n_full 48 tail [8, 8, 6] band 0>
func.func @matmul(%a: tensor<40x30xf32>, %b: tensor<30x70xf32>) -> tensor<40x70xf32> {
  %y = nn.matmul %a, %b : (tensor<40x30xf32>, tensor<30x70xf32>) -> tensor<40x70xf32>
  func.return %y : tensor<40x70xf32>
}

// 56 x 56 pixels, 24 output channels: on AVX-512 the model takes one 16-lane
// column and a half-width tail vector, on AVX2 and zen4 a tail-free rm4 x 3 of
// 8 lanes.
// AVX512-LABEL: func.func @conv1x1
// AVX512: nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn1 lanes16>, rtile.cover = #rtile.cover<m_full 3136 n_full 16 tail [8] band 0>
// AVX2-LABEL: func.func @conv1x1
// AVX2: nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn3 lanes8>, rtile.cover = #rtile.cover<m_full 3136 n_full 24 tail [] band 0>
// ZEN4-LABEL: func.func @conv1x1
// ZEN4: nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn3 lanes8>, rtile.cover = #rtile.cover<m_full 3136 n_full 24 tail [] band 0>, rtile.target = "zen4"
func.func @conv1x1(%x: tensor<1x56x56x144xf32>, %w: tensor<24x1x1x144xf32>, %b: tensor<24xf32>) -> tensor<1x56x56x24xf32> {
  %y = nn.conv %x, %w, %b {kernel = array<i64: 1, 1>} : (tensor<1x56x56x144xf32>, tensor<24x1x1x144xf32>, tensor<24xf32>) -> tensor<1x56x56x24xf32>
  func.return %y : tensor<1x56x56x24xf32>
}

// AVX512-LABEL: func.func @conv3x3
// AVX512: nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn2 lanes16>, rtile.cover = #rtile.cover<m_full 784 n_full 32 tail [] band 0>
// AVX2-LABEL: func.func @conv3x3
// AVX2: nn.conv {{.*}}rtile.geom = #rtile.geom<rm4 rn2 lanes8>, rtile.cover = #rtile.cover<m_full 784 n_full 32 tail [] band 0>
func.func @conv3x3(%x: tensor<1x30x30x16xf32>, %w: tensor<32x3x3x16xf32>, %b: tensor<32xf32>) -> tensor<1x28x28x32xf32> {
  %y = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>} : (tensor<1x30x30x16xf32>, tensor<32x3x3x16xf32>, tensor<32xf32>) -> tensor<1x28x28x32xf32>
  func.return %y : tensor<1x28x28x32xf32>
}

// AVX512-LABEL: func.func @depthwise
// AVX512-NOT: rtile
// AVX512: func.return
// AVX2-LABEL: func.func @depthwise
// AVX2-NOT: rtile
// AVX2: func.return
func.func @depthwise(%x: tensor<1x10x10x16xf32>, %w: tensor<16x3x3x1xf32>, %b: tensor<16xf32>) -> tensor<1x8x8x16xf32> {
  %y = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, group = 16 : i64} : (tensor<1x10x10x16xf32>, tensor<16x3x3x1xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
  func.return %y : tensor<1x8x8x16xf32>
}
