// RUN: tigris-opt %S/../Inputs/control_flow_if.onnx | filecheck %s --check-prefix=IF
// RUN: tigris-opt %S/../Inputs/control_flow_if.onnx | tigris-opt | filecheck %s --check-prefix=IF
// RUN: tigris-opt %S/../Inputs/control_flow_if.onnx | tigris-opt --print-op-generic | tigris-opt | filecheck %s --check-prefix=IF
// RUN: tigris-opt %S/../Inputs/control_flow_loop.onnx | filecheck %s --check-prefix=LOOP
// RUN: tigris-opt %S/../Inputs/control_flow_loop.onnx | tigris-opt --print-op-generic | tigris-opt | filecheck %s --check-prefix=LOOP
// RUN: tigris-opt %S/../Inputs/control_flow_while.onnx | filecheck %s --check-prefix=WHILE
// RUN: tigris-opt %S/../Inputs/control_flow_while.onnx | tigris-opt --print-op-generic | tigris-opt | filecheck %s --check-prefix=WHILE
// RUN: tigris-opt %S/../Inputs/control_flow_nested.onnx | filecheck %s --check-prefix=NESTED
// RUN: tigris-opt %S/../Inputs/control_flow_qdq_if.onnx | filecheck %s --check-prefix=QDQ

// ONNX If: the condition is computed at the top level (an i1 flag); each
// branch is a region that reads the outer input directly (ONNX subgraphs
// capture outer names) and ends in nn.yield. Feature maps stay channels-last
// inside the bodies, as at the top level.
// IF:      func.func @main(%x: tensor<1x8x8x3xf32>) -> tensor<1x8x8x4xf32>
// IF:      %[[M:.*]] = nn.reduce_mean
// IF:      %[[C:.*]] = nn.greater %[[M]], %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<i1>
// IF-NEXT: %[[Y:.*]] = nn.if %[[C]] : tensor<i1> -> (tensor<1x8x8x4xf32>) {
// IF-NEXT:   %[[WA:.*]] = nn.weight "conv_a.weight" : tensor<4x3x3x3xf32>
// IF-NEXT:   %[[BA:.*]] = nn.weight "conv_a.bias" : tensor<4xf32>
// IF-NEXT:   %[[CA:.*]] = nn.conv %x, %[[WA]], %[[BA]] {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}
// IF-NEXT:   %[[RA:.*]] = nn.relu %[[CA]]
// IF-NEXT:   nn.yield %[[RA]] : tensor<1x8x8x4xf32>
// IF-NEXT: } else {
// IF:        %[[CB:.*]] = nn.conv %x, {{.*}}dilations = array<i64: 2, 2>
// IF-NEXT:   nn.yield %[[CB]] : tensor<1x8x8x4xf32>
// IF-NEXT: }
// IF-NEXT: %[[R:.*]] = nn.relu %[[Y]]
// IF-NEXT: func.return %[[R]]

// ONNX Loop with a constant trip count and a constant true condition: the
// condition operand disappears; block arguments are the iteration number,
// the condition and the carried feature map (channels-last).
// LOOP:      %[[H0:.*]] = nn.conv %x
// LOOP-NEXT: %[[Y:.*]] = nn.loop max_trips 3 (%i, %cond_in, %h = %[[H0]]) -> (tensor<1x8x8x4xf32>) {
// LOOP:        %[[C:.*]] = nn.conv %h,
// LOOP-NEXT:   %[[R:.*]] = nn.relu %[[C]]
// LOOP-NEXT:   nn.yield %cond_in, %[[R]] : tensor<i1>, tensor<1x8x8x4xf32>
// LOOP-NEXT: }
// LOOP-NEXT: func.return %[[Y]]

// A while loop: no trip count, a computed first condition, and a condition
// computed in the body from a value of the enclosing graph (the limit).
// WHILE:      %[[LIM:.*]] = nn.weight "below0.const" : tensor<f32>
// WHILE-NEXT: %[[GO0:.*]] = nn.less %{{.*}}, %[[LIM]]
// WHILE-NEXT: %{{.*}} = nn.loop cond %[[GO0]] : tensor<i1> (%i, %cond_in, %h = %x) -> (tensor<1x8x8x4xf32>) {
// WHILE:        %[[S:.*]] = nn.add %h,
// WHILE:        %[[GO:.*]] = nn.less %{{.*}}, %[[LIM]] : (tensor<f32>, tensor<f32>) -> tensor<i1>
// WHILE-NEXT:   nn.yield %[[GO]], %{{.*}} : tensor<i1>, tensor<1x8x8x4xf32>

// Bodies nest: a Loop inside an If branch.
// NESTED:      nn.if %{{.*}} : tensor<i1> -> (tensor<1x8x8x4xf32>) {
// NESTED-NEXT:   %[[L:.*]] = nn.loop max_trips 2 (%i, %cond_in, %h = %x) -> (tensor<1x8x8x4xf32>) {
// NESTED:          nn.yield %cond_in, %{{.*}} : tensor<i1>, tensor<1x8x8x4xf32>
// NESTED-NEXT:   }
// NESTED-NEXT:   nn.yield %[[L]] : tensor<1x8x8x4xf32>
// NESTED-NEXT: } else {

// int8 QDQ inside the branches fuses like at the top level: the branch's
// conv reads the outer quantized input and is one quantized conv.
// QDQ:      %[[Q:.*]] = nn.quantize %x : (tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xi8, #nn.q<0.05 : 3>>
// QDQ:      nn.if
// QDQ:        %{{.*}} = nn.conv %[[Q]], {{.*}} -> tensor<1x8x8x3xi8, #nn.q<0.03 : -2>>
// QDQ:      } else {
// QDQ-NEXT:   %{{.*}} = nn.relu %[[Q]] : (tensor<1x8x8x3xi8, #nn.q<0.05 : 3>>) -> tensor<1x8x8x3xi8, #nn.q<0.03 : -2>>
