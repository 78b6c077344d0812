// If and Loop bodies are planned and tiled as models of their own: their
// stages and chains are named after the body's path, and the control-flow op
// runs whole in a stage of the enclosing graph (spec/tiling.md: "If and While
// hold nothing in fast memory themselves").

// A while loop at 4224 bytes: the body is tiled, chained and given its band rows.
// RUN: tigris-opt %S/../Inputs/control_flow_while.onnx --fuse-chains=budget=4224 --backprop-heights | filecheck %s --check-prefix=WHILE
// RUN: tigris-opt %S/../Inputs/control_flow_while.onnx --fuse-chains=budget=4224 --backprop-heights | tigris-opt | filecheck %s --check-prefix=WHILE
// RUN: tigris-opt %S/../Inputs/control_flow_while.onnx --fuse-chains=budget=4224 --backprop-heights | tigris-opt --print-op-generic | tigris-opt | filecheck %s --check-prefix=WHILE
// WHILE:      %{{.*}} = tile.stage "s0" strategy "{{inplace|normal|whole}}"
// WHILE:        nn.loop cond %{{.*}} : tensor<i1> (%i, %cond_in, %h = %x) -> (tensor<1x8x8x4xf32>) {
// WHILE:          tile.chain "loop0/body/c0" tile_h {{[0-9]+}} line_buffered band #tile.band<
// WHILE-NEXT:       tile.stage "loop0/body/s0" strategy "strips" band #tile.band<
// WHILE-NEXT:         nn.conv %h, {{.*}}tile.rows = {{[0-9]+}} : i64
// WHILE:            tile.stage "loop0/body/s1" strategy "strips"
// WHILE:          tile.stage "loop0/body/s{{[0-9]+}}" strategy "normal" {
// WHILE:            nn.less
// WHILE:          nn.yield %{{.*}}, %{{.*}} : tensor<i1>, tensor<1x8x8x4xf32>

// The passes are idempotent on bodies too.
// RUN: tigris-opt %S/../Inputs/control_flow_while.onnx --fuse-chains=budget=4224 --backprop-heights > %t.mlir
// RUN: tigris-opt %t.mlir --fuse-chains --backprop-heights | diff - %t.mlir

// Both branches of an If get their own stages; here both tile into strips.
// RUN: tigris-opt %S/../Inputs/control_flow_if.onnx --tile-stages=budget=2416 | filecheck %s --check-prefix=IF
// IF:      tile.stage "s0"
// IF:        nn.if %{{.*}} : tensor<i1> -> (tensor<1x8x8x4xf32>) {
// IF:          tile.stage "if0/then/s0" strategy "strips" band #tile.band<
// IF:        } else {
// IF:          tile.stage "if0/else/s0" strategy "strips" band #tile.band<

// Nested bodies: a Loop inside an If branch.
// RUN: tigris-opt %S/../Inputs/control_flow_nested.onnx --tile-stages=budget=8K | filecheck %s --check-prefix=NESTED
// NESTED: tile.stage "if0/then/s0" strategy
// NESTED: tile.stage "if0/then/loop0/body/s0" strategy
// NESTED: tile.stage "if0/else/s0" strategy

// Below what a node and its bodies need: one diagnostic, the smallest budget
// (the then branch fits its 182 bytes in column bands, the else branch not).
// RUN: not tigris-opt %S/../Inputs/control_flow_if.onnx --form-stages=budget=1500 2>&1 | filecheck %s --check-prefix=NOFIT
// NOFIT: if0: 'if_3' holds 1808 bytes of operands and results, which leaves nothing of the 1500-byte budget to its bodies; the smallest budget that fits it is {{[0-9]+}} bytes
// A body reads its operands in whole rows (they arrive as a stream from the
// enclosing stage), so its first convolution takes no 2D tiles.
// RUN: not tigris-opt %S/../Inputs/control_flow_if.onnx --form-stages=budget=1990 2>&1 | filecheck %s --check-prefix=BODYNOFIT
// BODYNOFIT: node 0 'conv_a' (Conv) in if0/then does not fit the 182 bytes the budget of 1990 leaves to the body (1808 bytes are held by the enclosing control flow) even with one-row bands (a body reads its operands in whole rows); the smallest budget that fits it is 2224 bytes
// RUN: not tigris-opt %S/../Inputs/control_flow_if.onnx --form-stages=budget=2223 2>&1 | filecheck %s --check-prefix=THENNOFIT
// THENNOFIT: node 0 'conv_a' (Conv) in if0/then does not fit the 415 bytes
// RUN: not tigris-opt %S/../Inputs/control_flow_if.onnx --form-stages=budget=2224 2>&1 | filecheck %s --check-prefix=ELSENOFIT
// ELSENOFIT: node 0 'conv_b' (Conv) in if0/else does not fit the 416 bytes the budget of 2224 leaves to the body (1808 bytes are held by the enclosing control flow) even with one-row bands (a body reads its operands in whole rows); the smallest budget that fits it is 2416 bytes

// A branch without ops (it yields an outer value) has nothing to plan.
// RUN: tigris-opt %s --tile-stages=budget=64K | filecheck %s --check-prefix=EMPTY
// EMPTY:      nn.if %{{.*}} : tensor<i1> -> (tensor<1x4x4x2xf32>) {
// EMPTY-NEXT:   tile.stage "if0/then/s0" strategy "inplace" {
// EMPTY:      } else {
// EMPTY-NEXT:   nn.yield %x : tensor<1x4x4x2xf32>
// EMPTY-NEXT: }

// The loop level lowers control flow (tests/lit/loop/control_flow.mlir).
// RUN: tigris-run %S/../Inputs/control_flow_if.onnx -m 64K --random-input 0 --check 2>&1 | filecheck %s --check-prefix=CLI
// CLI: output 'out': equals the untiled reference
// CLI-NOT: Traceback
// The untiled reference runs it and agrees with onnxruntime.
// RUN: tigris-run %S/../Inputs/control_flow_while.onnx --random-input 0 --check | filecheck %s --check-prefix=REF
// REF: output 'y': ok

func.func @main(%x: tensor<1x4x4x2xf32>, %t: tensor<f32>) -> tensor<1x4x4x2xf32> {
  %m = nn.reduce_mean %x {axes = array<i64>, keepdims = 0 : i64} : (tensor<1x4x4x2xf32>) -> tensor<f32>
  %c = nn.greater %m, %t : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %y = nn.if %c : tensor<i1> -> (tensor<1x4x4x2xf32>) {
    %r = nn.relu %x : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
    nn.yield %r : tensor<1x4x4x2xf32>
  } else {
    nn.yield %x : tensor<1x4x4x2xf32>
  }
  func.return %y : tensor<1x4x4x2xf32>
}
