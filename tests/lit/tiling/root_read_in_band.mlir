// A band output (@main's second result) that an op of the band reads whole (the
// mean over every axis): the band ending at the mean cannot hold it, so
// stage formation cuts there instead of failing inside the band builder.
// RUN: tigris-analyze %s -m 2K | filecheck %s
// RUN: not tigris-analyze %s -m 256 | filecheck %s --check-prefix=SMALL
// CHECK: fits {{.*}} yes
// SMALL: fits {{.*}} no
builtin.module {
  func.func @main(%x: tensor<1x8x8x4xf32>) -> (tensor<1xf32>, tensor<1x8x8x4xf32>) attributes {nn.input_names = ["x"], nn.input_layouts = ["nchw"], nn.output_names = ["m", "s"], nn.output_layouts = ["scalar", "nchw"]} {
    %w = nn.weight "w" : tensor<4x3x3x4xf32>
    %b = nn.weight "b" : tensor<4xf32>
    %one = nn.weight "one" : tensor<1x1x1x1xf32>
    %c = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
    %r = nn.relu %c : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %a = nn.add %x, %r : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %s = nn.add %a, %one : (tensor<1x8x8x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x8x8x4xf32>
    %m = nn.reduce_mean %s {axes = array<i64: 0, 1, 2, 3>, keepdims = 0 : i64} : (tensor<1x8x8x4xf32>) -> tensor<f32>
    %m1 = nn.reshape %m : (tensor<f32>) -> tensor<1xf32>
    func.return %m1, %s : tensor<1xf32>, tensor<1x8x8x4xf32>
  }
}
