// RUN: not tigris-opt %s --gebp-tile=target=avx2 --lower-gebp -t c 2>&1 | filecheck %s
// RUN: not tigris-opt %s -t c 2>&1 | filecheck %s --check-prefix=UNTILED

// The C target prints loop-level IR only; the first graph op that is not
// lowered is named, with what would lower it. Exit 1, no partial output.

// CHECK: the C target prints loop-level IR; 'nn.conv' %y in @f (op 1 of its body) is not lowered (lower-gebp does not cover it: convolution sites are not lowered yet (lower-gebp lowers gemm and matmul))
// CHECK-NOT: Traceback
// UNTILED: the C target prints loop-level IR; 'nn.conv' %y in @f (op 1 of its body) is not lowered (run --gebp-tile and --lower-gebp first)
func.func @f(%x: tensor<1x6x6x8xf32>, %w: tensor<16x1x1x8xf32>, %b: tensor<16xf32>) -> tensor<1x6x6x16xf32> {
  %y = nn.conv %x, %w, %b {kernel = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>, tensor<16x1x1x8xf32>, tensor<16xf32>) -> tensor<1x6x6x16xf32>
  func.return %y : tensor<1x6x6x16xf32>
}

