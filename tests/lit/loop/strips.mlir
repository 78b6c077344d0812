// RUN: tigris-opt %s --split-input-file --lower-to-loops=budget=1K --plan-arena | filecheck %s

// A strided 1D conv in strips: 4 tiles of 8 output rows. Each tile loads its
// input rows with the halo (rows 14..16 are read by tiles 0 and 1), computes
// its 8 rows into the fast band buffer and spills them.
func.func @main(%x: tensor<1x64x8xf32>) -> tensor<1x32x8xf32> {
  %w = nn.weight "w" : tensor<8x5x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %y = nn.conv %x, %w, %b {kernel = array<i64: 5>, strides = array<i64: 2>, pads = array<i64: 2, 2>} : (tensor<1x64x8xf32>, tensor<8x5x8xf32>, tensor<8xf32>) -> tensor<1x32x8xf32>
  func.return %y : tensor<1x32x8xf32>
}
// CHECK:      "memref.global"() <{sym_name = "w_w", type = memref<8x5x8xf32>, initial_value, sym_visibility = "private"}> {loop.ref = "w"}
// CHECK:      sym_name = "stage0_held_x", type = memref<4x2xindex>, initial_value = dense<{{\[}}[0, 17], [14, 33], [30, 49], [46, 64]]>
// CHECK:      sym_name = "stage0_load_x", type = memref<4x2xindex>, initial_value = dense<{{\[}}[0, 17], [14, 33], [30, 49], [46, 64]]>
// CHECK:      sym_name = "stage0_out_conv0", type = memref<4x2xindex>, initial_value = dense<{{\[}}[0, 8], [8, 16], [16, 24], [24, 32]]>
// CHECK:      sym_name = "stage0_spill_y", type = memref<4x2xindex>, initial_value = dense<{{\[}}[0, 8], [8, 16], [16, 24], [24, 32]]>
// CHECK:      func.func @main(%x: memref<1x64x8xf32, "slow"> {loop.offset = {{[0-9]+}} : i64}) -> memref<1x32x8xf32, "slow">
// CHECK-SAME: loop.plan = {peak = 864 : i64, slow_peak = 3072 : i64, slow_reads = 2336 : i64, slow_writes = 1024 : i64, budget = 1024 : i64}, loop.arena = 864 : i64
// CHECK:        %s_y = memref.alloc() {loop.tensor = "y", loop.offset = {{[0-9]+}} : i64} : memref<1x32x8xf32, "slow">
// CHECK:        %y = memref.alloc() {loop.tensor = "y", loop.offset = {{[0-9]+}} : i64} : memref<1x8x8xf32, "fast">
// CHECK:        %x_1 = memref.alloc() {loop.tensor = "x", loop.offset = {{[0-9]+}} : i64} : memref<1x19x8xf32, "fast">
// CHECK:        scf.for %tile = %c0 to %c4 step %c1 {
// CHECK:          %load_x_lo = memref.load %stage0_load_x[%tile, %c0] : memref<4x2xindex>
// CHECK:          %[[S:.*]] = memref.subview %x[0, %load_x_lo, 0] [1, %[[N:.*]], 8] [1, 1, 1] : memref<1x64x8xf32, "slow"> to memref<1x?x8xf32, strided<[512, 8, 1], offset: ?>, "slow">
// CHECK:          %[[F:.*]] = memref.subview %x_1[0, %{{.*}}, 0] [1, %[[N]], 8] [1, 1, 1] : memref<1x19x8xf32, "fast">
// CHECK-NEXT:     "memref.copy"(%[[S]], %[[F]])
// CHECK:          loop.band ins(%{{.*}}, %w_w, %w_b : {{.*}}) outs(%{{.*}} : {{.*}}) bounds(%held_x_lo, %held_x_hi, %out_conv0_lo, %out_conv0_hi) cuts [array<i64: 1>, array<i64>, array<i64>, array<i64: 1>] attributes {loop.node = "conv_0"} {
// CHECK-NEXT:     ^bb0(%{{.*}}: tensor<1x64x8xf32>, %{{.*}}: tensor<8x5x8xf32>, %{{.*}}: tensor<8xf32>):
// CHECK-NEXT:       nn.conv {{.*}} {kernel = array<i64: 5>, strides = array<i64: 2>, pads = array<i64: 2, 2>}
// CHECK-NEXT:       loop.yield
// CHECK:          %[[Y:.*]] = memref.subview %y[0, {{.*}}] : memref<1x8x8xf32, "fast">
// CHECK-NEXT:     %[[SY:.*]] = memref.subview %s_y[0, %spill_y_lo, 0]
// CHECK-NEXT:     "memref.copy"(%[[Y]], %[[SY]])
// CHECK:        } {loop.unit = "stage 0", loop.kind = "strips"}
// CHECK-NEXT:   memref.dealloc %y
// CHECK-NEXT:   memref.dealloc %x_1
// CHECK-NEXT:   func.return %s_y : memref<1x32x8xf32, "slow">
// CHECK:      func.func private @main_untiled(%x: tensor<1x64x8xf32>) -> tensor<1x32x8xf32>

// -----
// A 2D conv that is wider than a strip allows: a grid of 2D tiles, each
// with its halo in both directions (held x: rows, then columns).
func.func @main(%x: tensor<1x16x16x8xf32>) -> tensor<1x8x8x8xf32> {
  %w = nn.weight "w" : tensor<8x3x3x8xf32>
  %b = nn.weight "b" : tensor<8xf32>
  %y = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  func.return %y : tensor<1x8x8x8xf32>
}
// CHECK:      sym_name = "stage0_held_x", type = memref<16x4xindex>
// CHECK-SAME:   dense<{{\[}}[0, 4, 0, 4], [0, 4, 3, 8], [0, 4, 7, 12], [0, 4, 11, 16], [3, 8, 0, 4],
// CHECK-SAME:   loop.columns = ["1.0", "1.1", "2.0", "2.1"]
// CHECK:      sym_name = "stage0_out_conv0", type = memref<16x4xindex>
// CHECK-SAME:   dense<{{\[}}[0, 2, 0, 2], [0, 2, 2, 4], [0, 2, 4, 6], [0, 2, 6, 8], [2, 4, 0, 2],
// CHECK:      func.func @main
// CHECK-SAME: loop.plan = {peak = {{[0-9]+}} : i64
// CHECK:        memref.alloc() {loop.tensor = "x", {{.*}}} : memref<1x5x5x8xf32, "fast">
// CHECK:        scf.for %tile = %c0 to %c16 step %c1 {
// CHECK:          memref.subview %x[0, %load_x_lo, %load_x_lo_ax2, 0] [1, %{{.*}}, %{{.*}}, 8] [1, 1, 1, 1] : memref<1x16x16x8xf32, "slow"> to memref<1x?x?x8xf32
// CHECK:          loop.band {{.*}} bounds(%held_x_lo, %held_x_hi, %held_x_lo_ax2, %held_x_hi_ax2, %out_conv0_lo, %out_conv0_hi, %out_conv0_lo_ax2, %out_conv0_hi_ax2) cuts [array<i64: 1, 2>, array<i64>, array<i64>, array<i64: 1, 2>]
// CHECK:        } {loop.unit = "stage 0", loop.kind = "grid"}
