// A chain's tile_h of 2^63 and more, and a band's counts out of the i64 range:
// a bound diagnostic naming the attribute, its range and the op's place.
// RUN: tigris-opt %S/../Inputs/conv_relu.onnx --tile-stages=budget=1K --fuse-chains -o %t.mlir
// RUN: sed 's/tile_h [0-9]* line_buffered/tile_h 9223372036854775808 line_buffered/' %t.mlir > %t.wrap.mlir
// RUN: not tigris-run %t.wrap.mlir --random-input 0 2>&1 | filecheck %s --check-prefix=WRAP
// WRAP: wrap.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the IR does not verify: tile.chain '{{.*}}': tile_h must lie in [1, 9223372036854775807], got -9223372036854775808 (an integer literal of 2^63 or more wraps to a negative i64)
// RUN: sed 's/tile_h [0-9]* line_buffered/tile_h 0 line_buffered/' %t.mlir > %t.zero.mlir
// RUN: not tigris-opt %t.zero.mlir 2>&1 | filecheck %s --check-prefix=ZERO
// ZERO: zero.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the IR does not verify: tile.chain '{{.*}}': tile_h must lie in [1, 9223372036854775807], got 0{{$}}
// RUN: sed '0,/#tile.band<tile_h = [0-9]*/s//#tile.band<tile_h = 9223372036854775808/' %t.mlir > %t.band.mlir
// RUN: not tigris-opt %t.band.mlir 2>&1 | filecheck %s --check-prefix=BAND
// BAND: band.mlir:{{[0-9]+}}:{{[0-9]+}}: error: #tile.band: tile_h must lie in [1, 9223372036854775807], got 9223372036854775808
// RUN: sed 's/tile_h [0-9]* line_buffered/tile_h 18446744073709551617 line_buffered/' %t.mlir > %t.huge.mlir
// RUN: not tigris-opt %t.huge.mlir 2>&1 | filecheck %s --check-prefix=HUGE
// HUGE: huge.mlir:{{[0-9]+}}:{{[0-9]+}}: error: Integer value 18446744073709551617 is out of range for type i64
