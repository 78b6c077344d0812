// RUN: tigris-opt %s --lower-to-loops=budget=400 --plan-arena | filecheck %s

// A dilated window clipped by the padding: output row 0 of the conv reads
// rows -1 and 1 of %p (row 1 only), row 1 reads rows 0 and 2. Line buffers
// compute every row once, in order, so the first tile computes rows 0 and 1
// of %p (the ranges made monotone), and the second reads row 0 from the
// buffer. Every row of %x is loaded once (slow reads 512 = the whole of %x).
func.func @main(%x: tensor<1x8x2x8xf32>) -> tensor<1x4x1x1xf32> {
  %w = nn.weight "w" : tensor<1x2x3x8xf32>
  %b = nn.weight "b" : tensor<1xf32>
  %p = nn.average_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x2x8xf32>) -> tensor<1x5x2x8xf32>
  %y = nn.conv %p, %w, %b {kernel = array<i64: 2, 3>, dilations = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 3>} : (tensor<1x5x2x8xf32>, tensor<1x2x3x8xf32>, tensor<1xf32>) -> tensor<1x4x1x1xf32>
  func.return %y : tensor<1x4x1x1xf32>
}
// CHECK:      sym_name = "chain0_held_p", type = memref<4x2xindex>, initial_value = dense<{{\[}}[0, 2], [0, 3], [1, 4], [2, 5]]>
// CHECK:      sym_name = "chain0_keep_p", type = memref<4x2xindex>, initial_value = dense<{{\[}}[0, 0], [0, 2], [1, 2], [1, 2]]>
// CHECK:      sym_name = "chain0_load_x", type = memref<4x2xindex>, initial_value = dense<{{\[}}[0, 3], [3, 5], [5, 7], [7, 8]]>
// CHECK:      sym_name = "chain0_out_average_pool0", type = memref<4x2xindex>, initial_value = dense<{{\[}}[0, 2], [2, 3], [3, 4], [4, 5]]>
// CHECK:      loop.plan = {peak = 400 : i64, slow_peak = 528 : i64, slow_reads = 512 : i64, slow_writes = 16 : i64, budget = 400 : i64}
// CHECK:      loop.kind = "chain, line-buffered"
