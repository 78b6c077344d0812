// RUN: tigris-opt %s --split-input-file --verify-diagnostics -t c | filecheck %s

// What the C target refuses to print (one diagnostic, no C): plans that do
// not verify as plan-arena verifies them. Hand-edited from
// `tigris-opt conv_relu.onnx --lower-to-loops=budget=2K --plan-arena`.

// The result of the relu placed over the convolution's, which is still read.
builtin.module attributes {nn.weights = "conv_relu.onnx", tile.budget = 2048 : i64} {
  "memref.global"() <{sym_name = "w_conv1_weight", type = memref<4x3x3x3xf32>, initial_value, sym_visibility = "private"}> {loop.ref = "conv1.weight"} : () -> ()
  "memref.global"() <{sym_name = "w_conv1_bias", type = memref<4xf32>, initial_value, sym_visibility = "private"}> {loop.ref = "conv1.bias"} : () -> ()
  func.func @main(%input: memref<1x8x8x3xf32, "fast"> {loop.offset = 256 : i64}) -> memref<1x8x8x4xf32, "fast"> attributes {nn.input_names = ["input"], nn.input_layouts = ["nchw"], nn.output_names = ["output"], nn.output_layouts = ["nchw"], loop.plan = {peak = 2048 : i64, slow_peak = 0 : i64, slow_reads = 0 : i64, slow_writes = 0 : i64, budget = 2048 : i64}, loop.arena = 2048 : i64, loop.slow_arena = 0 : i64} {
    %conv0 = memref.alloc() {loop.tensor = "conv_0", loop.offset = 1024 : i64} : memref<1x8x8x4xf32, "fast">
    %w_conv1_weight = memref.get_global @w_conv1_weight : memref<4x3x3x3xf32>
    %w_conv1_bias = memref.get_global @w_conv1_bias : memref<4xf32>
    loop.band ins(%input, %w_conv1_weight, %w_conv1_bias : memref<1x8x8x3xf32, "fast">, memref<4x3x3x3xf32>, memref<4xf32>) outs(%conv0 : memref<1x8x8x4xf32, "fast">) bounds() cuts [array<i64>, array<i64>, array<i64>, array<i64>] {
    ^bb0(%0: tensor<1x8x8x3xf32>, %1: tensor<4x3x3x3xf32>, %2: tensor<4xf32>):
      %3 = nn.conv %0, %1, %2 {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
      loop.yield %3 : tensor<1x8x8x4xf32>
    }
    %relu1 = memref.alloc() {loop.tensor = "relu_1", loop.offset = 1024 : i64} : memref<1x8x8x4xf32, "fast">
    loop.band ins(%conv0 : memref<1x8x8x4xf32, "fast">) outs(%relu1 : memref<1x8x8x4xf32, "fast">) bounds() cuts [array<i64>, array<i64>] {
    ^bb0(%4: tensor<1x8x8x4xf32>):
      %5 = nn.relu %4 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      loop.yield %5 : tensor<1x8x8x4xf32>
    }
    memref.dealloc %conv0 : memref<1x8x8x4xf32, "fast">
    func.return %relu1 : memref<1x8x8x4xf32, "fast">
  }
}
// CHECK:      the plan does not verify, no C is printed:
// CHECK-NEXT:   fast buffers 'conv_0' [1024, 2048) and 'relu_1' [1024, 2048) overlap while both are live

// -----
// A fast arena above the module's budget.
builtin.module attributes {nn.weights = "conv_relu.onnx", tile.budget = 1024 : i64} {
  "memref.global"() <{sym_name = "w_conv1_weight", type = memref<4x3x3x3xf32>, initial_value, sym_visibility = "private"}> {loop.ref = "conv1.weight"} : () -> ()
  "memref.global"() <{sym_name = "w_conv1_bias", type = memref<4xf32>, initial_value, sym_visibility = "private"}> {loop.ref = "conv1.bias"} : () -> ()
  func.func @main(%input: memref<1x8x8x3xf32, "fast"> {loop.offset = 256 : i64}) -> memref<1x8x8x4xf32, "fast"> attributes {nn.input_names = ["input"], nn.input_layouts = ["nchw"], nn.output_names = ["output"], nn.output_layouts = ["nchw"], loop.plan = {peak = 2048 : i64, slow_peak = 0 : i64, slow_reads = 0 : i64, slow_writes = 0 : i64, budget = 2048 : i64}, loop.arena = 2048 : i64, loop.slow_arena = 0 : i64} {
    %conv0 = memref.alloc() {loop.tensor = "conv_0", loop.offset = 1024 : i64} : memref<1x8x8x4xf32, "fast">
    %w_conv1_weight = memref.get_global @w_conv1_weight : memref<4x3x3x3xf32>
    %w_conv1_bias = memref.get_global @w_conv1_bias : memref<4xf32>
    loop.band ins(%input, %w_conv1_weight, %w_conv1_bias : memref<1x8x8x3xf32, "fast">, memref<4x3x3x3xf32>, memref<4xf32>) outs(%conv0 : memref<1x8x8x4xf32, "fast">) bounds() cuts [array<i64>, array<i64>, array<i64>, array<i64>] {
    ^bb0(%0: tensor<1x8x8x3xf32>, %1: tensor<4x3x3x3xf32>, %2: tensor<4xf32>):
      %3 = nn.conv %0, %1, %2 {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
      loop.yield %3 : tensor<1x8x8x4xf32>
    }
    %relu1 = memref.alloc() {loop.tensor = "relu_1", loop.offset = 0 : i64} : memref<1x8x8x4xf32, "fast">
    loop.band ins(%conv0 : memref<1x8x8x4xf32, "fast">) outs(%relu1 : memref<1x8x8x4xf32, "fast">) bounds() cuts [array<i64>, array<i64>] {
    ^bb0(%4: tensor<1x8x8x4xf32>):
      %5 = nn.relu %4 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      loop.yield %5 : tensor<1x8x8x4xf32>
    }
    memref.dealloc %conv0 : memref<1x8x8x4xf32, "fast">
    func.return %relu1 : memref<1x8x8x4xf32, "fast">
  }
}
// CHECK:      the plan does not verify, no C is printed:
// CHECK-NEXT:   the fast arena of 2048 bytes exceeds the budget of 1024

// -----
// A buffer without an offset.
builtin.module attributes {nn.weights = "conv_relu.onnx", tile.budget = 2048 : i64} {
  "memref.global"() <{sym_name = "w_conv1_weight", type = memref<4x3x3x3xf32>, initial_value, sym_visibility = "private"}> {loop.ref = "conv1.weight"} : () -> ()
  "memref.global"() <{sym_name = "w_conv1_bias", type = memref<4xf32>, initial_value, sym_visibility = "private"}> {loop.ref = "conv1.bias"} : () -> ()
  func.func @main(%input: memref<1x8x8x3xf32, "fast"> {loop.offset = 256 : i64}) -> memref<1x8x8x4xf32, "fast"> attributes {nn.input_names = ["input"], nn.input_layouts = ["nchw"], nn.output_names = ["output"], nn.output_layouts = ["nchw"], loop.plan = {peak = 2048 : i64, slow_peak = 0 : i64, slow_reads = 0 : i64, slow_writes = 0 : i64, budget = 2048 : i64}, loop.arena = 2048 : i64, loop.slow_arena = 0 : i64} {
    %conv0 = memref.alloc() {loop.tensor = "conv_0", loop.offset = 1024 : i64} : memref<1x8x8x4xf32, "fast">
    %w_conv1_weight = memref.get_global @w_conv1_weight : memref<4x3x3x3xf32>
    %w_conv1_bias = memref.get_global @w_conv1_bias : memref<4xf32>
    loop.band ins(%input, %w_conv1_weight, %w_conv1_bias : memref<1x8x8x3xf32, "fast">, memref<4x3x3x3xf32>, memref<4xf32>) outs(%conv0 : memref<1x8x8x4xf32, "fast">) bounds() cuts [array<i64>, array<i64>, array<i64>, array<i64>] {
    ^bb0(%0: tensor<1x8x8x3xf32>, %1: tensor<4x3x3x3xf32>, %2: tensor<4xf32>):
      %3 = nn.conv %0, %1, %2 {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
      loop.yield %3 : tensor<1x8x8x4xf32>
    }
    %relu1 = memref.alloc() {loop.tensor = "relu_1"} : memref<1x8x8x4xf32, "fast">
    loop.band ins(%conv0 : memref<1x8x8x4xf32, "fast">) outs(%relu1 : memref<1x8x8x4xf32, "fast">) bounds() cuts [array<i64>, array<i64>] {
    ^bb0(%4: tensor<1x8x8x4xf32>):
      %5 = nn.relu %4 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      loop.yield %5 : tensor<1x8x8x4xf32>
    }
    memref.dealloc %conv0 : memref<1x8x8x4xf32, "fast">
    func.return %relu1 : memref<1x8x8x4xf32, "fast">
  }
}
// CHECK:      the plan does not verify, no C is printed:
// CHECK-NEXT:   fast buffer 'relu_1' has no loop.offset (run plan-arena)

// -----
// An op outside the loop level, named.
builtin.module attributes {nn.weights = "conv_relu.onnx", tile.budget = 2048 : i64} {
  "memref.global"() <{sym_name = "w_conv1_weight", type = memref<4x3x3x3xf32>, initial_value, sym_visibility = "private"}> {loop.ref = "conv1.weight"} : () -> ()
  "memref.global"() <{sym_name = "w_conv1_bias", type = memref<4xf32>, initial_value, sym_visibility = "private"}> {loop.ref = "conv1.bias"} : () -> ()
  func.func @main(%input: memref<1x8x8x3xf32, "fast"> {loop.offset = 256 : i64}) -> memref<1x8x8x4xf32, "fast"> attributes {nn.input_names = ["input"], nn.input_layouts = ["nchw"], nn.output_names = ["output"], nn.output_layouts = ["nchw"], loop.plan = {peak = 2048 : i64, slow_peak = 0 : i64, slow_reads = 0 : i64, slow_writes = 0 : i64, budget = 2048 : i64}, loop.arena = 2048 : i64, loop.slow_arena = 0 : i64} {
    %c7 = arith.constant 7 : index
    %c2 = arith.constant 2 : index
    %q = arith.divui %c7, %c2 : index
    %conv0 = memref.alloc() {loop.tensor = "conv_0", loop.offset = 1024 : i64} : memref<1x8x8x4xf32, "fast">
    %w_conv1_weight = memref.get_global @w_conv1_weight : memref<4x3x3x3xf32>
    %w_conv1_bias = memref.get_global @w_conv1_bias : memref<4xf32>
    loop.band ins(%input, %w_conv1_weight, %w_conv1_bias : memref<1x8x8x3xf32, "fast">, memref<4x3x3x3xf32>, memref<4xf32>) outs(%conv0 : memref<1x8x8x4xf32, "fast">) bounds() cuts [array<i64>, array<i64>, array<i64>, array<i64>] {
    ^bb0(%0: tensor<1x8x8x3xf32>, %1: tensor<4x3x3x3xf32>, %2: tensor<4xf32>):
      %3 = nn.conv %0, %1, %2 {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
      loop.yield %3 : tensor<1x8x8x4xf32>
    }
    %relu1 = memref.alloc() {loop.tensor = "relu_1", loop.offset = 0 : i64} : memref<1x8x8x4xf32, "fast">
    loop.band ins(%conv0 : memref<1x8x8x4xf32, "fast">) outs(%relu1 : memref<1x8x8x4xf32, "fast">) bounds() cuts [array<i64>, array<i64>] {
    ^bb0(%4: tensor<1x8x8x4xf32>):
      %5 = nn.relu %4 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      loop.yield %5 : tensor<1x8x8x4xf32>
    }
    memref.dealloc %conv0 : memref<1x8x8x4xf32, "fast">
    func.return %relu1 : memref<1x8x8x4xf32, "fast">
  }
}
// CHECK:      the plan does not verify, no C is printed:
// CHECK-NEXT:   the loop interpreter cannot run 'arith.divui'
// CHECK-NOT:  int tigris_run
