// If and Loop at the loop level: scf.if / scf.while around their bodies'
// tiled plans; a body's buffers lie in its node's workspace (loop.workspace),
// a Loop's carried value in the node's result buffer, its trip number and
// condition in buffers of their own.

// A Loop of three trips whose body is a line-buffered chain.
// RUN: tigris-opt %S/../Inputs/control_flow_loop.onnx --lower-to-loops=budget=3616 --plan-arena | filecheck %s --check-prefix=LOOP
// RUN: tigris-opt %S/../Inputs/control_flow_loop.onnx --lower-to-loops=budget=3616 --plan-arena | tigris-opt | filecheck %s --check-prefix=LOOP
// LOOP:      func.func @main(
// LOOP:        %[[RES:loop1]] = memref.alloc() {loop.tensor = "loop_1", loop.offset = {{[0-9]+}} : i64} : memref<1x8x8x4xf32, "fast">
// LOOP-NEXT:   %[[TRIP:loop1_trip]] = memref.alloc() {loop.tensor = "loop_1.trip", {{.*}} : memref<1xi64, "fast">
// LOOP-NEXT:   %[[GO:loop1_go]] = memref.alloc() {loop.tensor = "loop_1.go", {{.*}} : memref<1xi1, "fast">
// LOOP-NEXT:   %[[WS:loop1_body]] = memref.alloc() {loop.tensor = "loop_1.body", loop.offset = [[WSOFF:[0-9]+]] : i64} : memref<1536xui8, "fast">
// LOOP-NEXT:   "memref.copy"(%{{.*}}, %[[RES]])
// LOOP:        scf.while (%trip = %c0, %go = %{{.*}}) : (index, i1) -> (index, i1) {
// LOOP-NEXT:     %[[LT:.*]] = arith.cmpi slt, %trip, %c3 : index
// LOOP-NEXT:     %[[GOON:.*]] = arith.andi %[[LT]], %go : i1
// LOOP-NEXT:     scf.condition(%[[GOON]]) %trip, %go : index, i1
// LOOP-NEXT:   } do {
// LOOP:          memref.store %{{.*}}, %[[TRIP]][%c0] : memref<1xi64, "fast">
// LOOP-NEXT:     memref.store %{{.*}}, %[[GO]][%c0] : memref<1xi1, "fast">
// LOOP:          memref.alloc() {loop.tensor = "loop0/body/h", loop.offset = [[WSOFF]] : i64}
// LOOP:          scf.for %tile = {{.*}} {
// LOOP:            memref.subview %[[RES]][0, %load_h_lo, 0, 0]
// LOOP:            loop.band {{.*}} {loop.node = "loop0/body/conv_0"}
// LOOP:          } {loop.unit = "chain 0", loop.kind = "chain, line-buffered"}
// LOOP:          "memref.copy"(%relu1, %[[RES]])
// LOOP-NEXT:     %[[NEXT:.*]] = memref.load %[[GO]][%{{.*}}] : memref<1xi1, "fast">
// LOOP:          scf.yield %{{.*}}, %[[NEXT]] : index, i1
// LOOP-NEXT:   } attributes {loop.workspace = "loop_1.body", loop.node = "loop_1", loop.bodies = [{path = "loop0/body", peak = 1536 : i64}]}
// LOOP:        memref.dealloc %[[WS]]

// An If: the condition's element picks the branch; each branch its own plan
// (of its own peak) in the one workspace, its result copied into the node's.
// RUN: tigris-opt %S/../Inputs/control_flow_if.onnx --lower-to-loops=budget=2416 --plan-arena | filecheck %s --check-prefix=IF
// IF:        %[[RES:if3]] = memref.alloc() {loop.tensor = "if_3", {{.*}} : memref<1x8x8x4xf32, "fast">
// IF-NEXT:   %if3_body = memref.alloc() {loop.tensor = "if_3.body", loop.offset = [[WSOFF:[0-9]+]] : i64} : memref<608xui8, "fast">
// IF-NEXT:   %[[C:.*]] = memref.load %greater2[%c0] : memref<1xi1, "fast">
// IF-NEXT:   scf.if %[[C]] {
// IF:          memref.alloc() {loop.tensor = "if0/then/x", loop.offset = [[WSOFF]] : i64}
// IF:          loop.band {{.*}} {loop.node = "if0/then/conv_0"}
// IF:        } else {
// IF:          memref.alloc() {loop.tensor = "if0/else/x", loop.offset = [[WSOFF]] : i64}
// IF:          loop.band {{.*}} {loop.node = "if0/else/conv_0"}
// IF:        }{loop.workspace = "if_3.body", loop.node = "if_3", loop.bodies = [{path = "if0/then", peak = 416 : i64}, {path = "if0/else", peak = 608 : i64}]}

// Run: the interpreter equals the untiled reference on both paths.
// RUN: tigris-run %S/../Inputs/control_flow_nested.onnx -m 5680 --random-input 0 --check | filecheck %s --check-prefix=RAN
// RUN: tigris-run %S/../Inputs/control_flow_while.onnx -m 4160 --random-input 1 --check | filecheck %s --check-prefix=RAN
// RAN-NOT: Traceback
// RAN: output 'y': equals the untiled reference
