// RUN: tigris-opt %s --lower-to-loops=budget=4K --plan-arena | filecheck %s

// The whole graph fits: one stage run in place. The input and output live in
// the fast arena (the caller's buffers); every tensor is freed after its last
// use, so the add's result reuses the conv's bytes.
func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
  %w = nn.weight "w" : tensor<4x3x3x4xf32>
  %b = nn.weight "b" : tensor<4xf32>
  %a = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %r = nn.relu %a : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %y = nn.add %r, %x : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  func.return %y : tensor<1x8x8x4xf32>
}
// CHECK:      func.func @main(%x: memref<1x8x8x4xf32, "fast"> {loop.offset = [[X:[0-9]+]] : i64}) -> memref<1x8x8x4xf32, "fast">
// CHECK-SAME:   loop.plan = {peak = 3072 : i64, slow_peak = 0 : i64, slow_reads = 0 : i64, slow_writes = 0 : i64, budget = 4096 : i64}, loop.arena = 3072 : i64, loop.slow_arena = 0 : i64
// CHECK-NEXT:   %a = memref.alloc() {loop.tensor = "a", loop.offset = [[A:[0-9]+]] : i64} : memref<1x8x8x4xf32, "fast">
// CHECK-NOT:    memref.copy
// CHECK:        loop.band ins(%x, %w_w, %w_b : memref<1x8x8x4xf32, "fast">, memref<4x3x3x4xf32>, memref<4xf32>) outs(%a : memref<1x8x8x4xf32, "fast">) bounds() cuts [array<i64>, array<i64>, array<i64>, array<i64>]
// CHECK:        %r = memref.alloc() {loop.tensor = "r", loop.offset = {{[0-9]+}} : i64}
// CHECK:        memref.dealloc %a
// CHECK-NEXT:   %y = memref.alloc() {loop.tensor = "y", loop.offset = [[A]] : i64}
// CHECK:        loop.band ins(%r, %x : {{.*}}) outs(%y : memref<1x8x8x4xf32, "fast">)
// CHECK:        memref.dealloc %r
// CHECK-NEXT:   func.return %y : memref<1x8x8x4xf32, "fast">
