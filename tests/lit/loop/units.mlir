// RUN: tigris-opt %s --lower-to-loops=budget=4K --plan-arena | filecheck %s
// RUN: tigris-opt %s --lower-to-loops=budget=384 --plan-arena | filecheck %s --check-prefix=SUBROW

// conv -> relu -> GlobalAveragePool -> flatten -> gemm. At 4K: a
// line-buffered chain (the conv's input keeps its two history rows), the
// pool accumulates bands of rows, the gemm stage runs normally. At 384 B: a
// 2D grid (the Relu with its conv), then the pool accumulates runs of 8
// positions of one row.
func.func @main(%x: tensor<1x16x16x8xf32>) -> tensor<1x4xf32> {
  %w = nn.weight "w" : tensor<8x3x3x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %gw = nn.weight "gw" : tensor<8x4xf32>
  %gb = nn.weight "gb" : tensor<4xf32>
  %a = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x16x16x8xf32>
  %r = nn.relu %a : (tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32>
  %p = nn.global_average_pool %r : (tensor<1x16x16x8xf32>) -> tensor<1x1x1x8xf32>
  %f = nn.flatten %p {axis = 1 : i64} : (tensor<1x1x1x8xf32>) -> tensor<1x8xf32>
  %y = nn.gemm %f, %gw, %gb : (tensor<1x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// The chain: x is held from the first row its conv's new rows need; each
// tile loads only its new rows and moves the two rows it keeps to the front.
// CHECK:      sym_name = "chain0_held_x", type = memref<6x2xindex>, initial_value = dense<{{\[}}[0, 4], [2, 7], [5, 10], [8, 13], [11, 16], [14, 16]]>
// CHECK:      sym_name = "chain0_keep_x", type = memref<6x2xindex>, initial_value = dense<{{\[}}[0, 0], [2, 2], [3, 2], [3, 2], [3, 2], [3, 2]]>
// CHECK-SAME:   loop.columns = ["src", "n"]
// CHECK:      sym_name = "chain0_load_x", type = memref<6x2xindex>, initial_value = dense<{{\[}}[0, 4], [4, 7], [7, 10], [10, 13], [13, 16], [14, 14]]>
// CHECK:      sym_name = "stage2_acc", type = memref<3x2xindex>, initial_value = dense<{{\[}}[0, 6], [6, 12], [12, 16]]>
// CHECK:      func.func @main(%x: memref<1x16x16x8xf32, "slow"> {loop.offset = {{[0-9]+}} : i64}) -> memref<1x4xf32, "slow">
// CHECK-SAME:   loop.plan = {peak = 4096 : i64, slow_peak = 16384 : i64, slow_reads = 16416 : i64, slow_writes = 8240 : i64, budget = 4096 : i64}, loop.arena = 4096 : i64, loop.slow_arena = 16384 : i64
// The Relu overwrites the conv's rows: one buffer holds both.
// CHECK:        %a = memref.alloc() {loop.tensor = "a", loop.offset = {{[0-9]+}} : i64} : memref<1x3x16x8xf32, "fast">
// CHECK:        %x_1 = memref.alloc() {loop.tensor = "x", loop.offset = {{[0-9]+}} : i64} : memref<1x5x16x8xf32, "fast">
// CHECK-NOT:    loop.tensor = "r"
// CHECK:        scf.for %tile = %c0 to %c6 step %c1 {
// CHECK-NEXT:     %keep_x_n = memref.load %chain0_keep_x[%tile, %c1]
// CHECK-NEXT:     %keep_x_src = memref.load %chain0_keep_x[%tile, %c0]
// CHECK-NEXT:     %[[SRC:.*]] = memref.subview %x_1[0, %keep_x_src, 0, 0] [1, %keep_x_n, 16, 8]
// CHECK-NEXT:     %[[DST:.*]] = memref.subview %x_1[0, %c0, 0, 0] [1, %keep_x_n, 16, 8]
// CHECK-NEXT:     "memref.copy"(%[[SRC]], %[[DST]])
// CHECK:          loop.band ins({{.*}}) outs({{.*}}) bounds(%held_x_lo, %held_x_hi, %out_conv0_lo, %out_conv0_hi)
// CHECK:          %[[RIN:.*]] = memref.subview %a[0, %{{.*}}, 0, 0]
// CHECK:          %[[ROUT:.*]] = memref.subview %a[0, %{{.*}}, 0, 0]
// CHECK:          loop.band ins(%[[RIN]] : {{.*}}) outs(%[[ROUT]] : {{.*}}) bounds(%out_relu1_lo, %out_relu1_hi, %out_relu1_lo, %out_relu1_hi) cuts [array<i64: 1>, array<i64: 1>]
// CHECK:        } {loop.unit = "chain 0", loop.kind = "chain, line-buffered"}
// The accumulation: the sums start at zero, each band adds to them, the mean
// is taken once.
// CHECK:        %p_acc = memref.alloc() {loop.tensor = "p", loop.offset = {{[0-9]+}} : i64} : memref<1x1x1x8xf64, "fast">
// CHECK:        linalg.fill ins(%{{.*}} : f64) outs(%p_acc : memref<1x1x1x8xf64, "fast">)
// CHECK:        scf.for %tile_1 = %c0 to %c3 step %c1 {
// CHECK:          loop.accumulate ins(%{{.*}} : memref<1x?x16x8xf32, {{.*}}) outs(%p_acc : memref<1x1x1x8xf64, "fast">) bounds(%acc_lo, %acc_hi) cuts [array<i64: 1>, array<i64>] attributes {loop.node = "global_average_pool_2"} {
// CHECK-NEXT:     ^bb0(%{{.*}}: tensor<1x16x16x8xf32>):
// CHECK-NEXT:       nn.global_average_pool
// CHECK:        } {loop.unit = "stage 2", loop.kind = "accumulate"}
// CHECK-NEXT:   loop.finish ins(%p_acc : memref<1x1x1x8xf64, "fast">) outs(%p : memref<1x1x1x8xf32, "fast">) bounds() cuts [array<i64>, array<i64>]
// CHECK:        "memref.copy"(%p, %s_p)
// The normal stage: whole tensors, freed after their last use.
// CHECK:        %[[P:.*]] = memref.alloc() {loop.tensor = "p", {{.*}}} : memref<1x1x1x8xf32, "fast">
// CHECK-NEXT:   "memref.copy"(%s_p, %[[P]])
// CHECK-NEXT:   %f = memref.alloc() {loop.tensor = "f", {{.*}}} : memref<1x8xf32, "fast">
// CHECK-NEXT:   loop.band ins(%[[P]] : memref<1x1x1x8xf32, "fast">) outs(%f : memref<1x8xf32, "fast">) bounds() cuts [array<i64>, array<i64>]
// CHECK:        memref.dealloc %[[P]]
// CHECK-NEXT:   %y = memref.alloc()
// CHECK:        loop.band ins(%f, %w_gw, %w_gb : {{.*}}) outs(%y : memref<1x4xf32, "fast">)
// CHECK:        memref.dealloc %f
// CHECK-NEXT:   "memref.copy"(%y, %s_y)
// CHECK-NEXT:   memref.dealloc %y
// CHECK:        func.return %s_y : memref<1x4xf32, "slow">

// SUBROW:       loop.plan = {peak = 352 : i64, {{.*}}, budget = 384 : i64}
// SUBROW:       } {loop.unit = "stage 0", loop.kind = "grid"}
// SUBROW:       %{{r(_[0-9]+)?}} = memref.alloc() {loop.tensor = "r", {{.*}}} : memref<1x1x8x8xf32, "fast">
// SUBROW:       scf.for %tile_1 = %c0 to %c32 step %c1 {
// SUBROW:         loop.accumulate ins(%{{.*}} : memref<1x?x?x8xf32, {{.*}}) outs(%p_acc : memref<1x1x1x8xf64, "fast">) bounds(%acc_lo, %acc_hi, %acc_lo_ax2, %acc_hi_ax2) cuts [array<i64: 1, 2>, array<i64>]
// SUBROW:       } {loop.unit = "stage 1", loop.kind = "accumulate"}
