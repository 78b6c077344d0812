// RUN: not tigris-opt %s --gebp-tile=target=avx2 --lower-gebp -t c -o %t.c 2>&1 | filecheck %s

// A graph op no pass lowers yet stops the C target even when the gemm before it
// is lowered (the function is then bridged, not loop-level).

// CHECK: the C target prints loop-level IR; 'nn.relu' %r in @m (op {{[0-9]+}} of its body) is not lowered (no pass lowers it to loops yet; the C target prints the kernels lower-gebp makes of register-tiled nn.gemm and nn.matmul)
func.func @m(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>, %c: tensor<16xf32>) -> tensor<8x16xf32> {
  %y = nn.gemm %a, %b, %c : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %r = nn.relu %y : (tensor<8x16xf32>) -> tensor<8x16xf32>
  func.return %r : tensor<8x16xf32>
}
