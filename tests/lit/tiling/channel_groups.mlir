// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; r = np.random.default_rng(0); np.savez('%t/w.npz', w=r.standard_normal((32, 3, 3, 1)).astype(np.float32), b=r.standard_normal(32).astype(np.float32))"
// RUN: sed 's|WEIGHTS|%t/w.npz|' %s | tigris-opt --tile-stages=budget=1K | filecheck %s --check-prefix=BAND
// RUN: sed 's|WEIGHTS|%t/w.npz|' %s | tigris-opt --tile-stages=budget=1K | tigris-opt | filecheck %s --check-prefix=BAND
// RUN: sed 's|WEIGHTS|%t/w.npz|' %s | tigris-opt --lower-to-loops=budget=1K --plan-arena | filecheck %s --check-prefix=LOOPS
// RUN: sed 's|WEIGHTS|%t/w.npz|' %s | tigris-opt --lower-to-loops=budget=1K --gebp-tile --lower-gebp --plan-arena -t c | filecheck %s --check-prefix=C
// RUN: sed 's|WEIGHTS|%t/w.npz|' %s > %t/m.mlir && tigris-run %t/m.mlir -m 1K --random-input 0 --check --stats | filecheck %s --check-prefix=EXEC

// A 3x3 depthwise convolution and its Relu on a 6 x 6 map of 32 float32
// channels. At 1K neither a one-row strip (3 input rows of 32 channels:
// 2304 bytes) nor a 1 x 1 tile (9 pixels of 32 channels: 1152 bytes plus the
// output) fits; every op keeps its channels apart, so tile-stages cuts the
// channels: 11 groups of 3 channels (the last of 2), each over the whole
// map, which loads every input byte once.
builtin.module attributes {nn.weights = "WEIGHTS"} {
  func.func @main(%x: tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32> {
    %w = nn.weight "w" : tensor<32x3x3x1xf32>
    %b = nn.weight "b" : tensor<32xf32>
    %a = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, group = 32 : i64} : (tensor<1x6x6x32xf32>, tensor<32x3x3x1xf32>, tensor<32xf32>) -> tensor<1x6x6x32xf32>
    %r = nn.relu %a : (tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
    func.return %r : tensor<1x6x6x32xf32>
  }
}

// The decision, on the stage's band record (and read back unchanged).
// BAND: tile.stage "s0" strategy "strips" band #tile.band<tile_h = 6, tile_w = 0, tiles = 11, halo = [1, 1, 0, 0], peak = 864, channels = 3>

// Each buffer holds one group's channels of the whole map (the Relu writes
// over the conv's buffer); the tile tables give every tensor's channel range
// (the `3.0`, `3.1` columns) and every band cuts the channel axis.
// LOOPS:      sym_name = "stage0_held_x", type = memref<11x4xindex>, initial_value = dense<{{\[}}[0, 6, 0, 3], [0, 6, 3, 6], {{.*}}, [0, 6, 30, 32]]>
// LOOPS-SAME: loop.columns = ["1.0", "1.1", "3.0", "3.1"]
// LOOPS:      loop.plan = {peak = 864 : i64, slow_peak = 9216 : i64, slow_reads = 4608 : i64, slow_writes = 4608 : i64, budget = 1024 : i64}, loop.arena = 864 : i64
// LOOPS:      %a = memref.alloc() {loop.tensor = "a", loop.offset = {{[0-9]+}} : i64} : memref<1x6x6x3xf32, "fast">
// LOOPS:      %x_1 = memref.alloc() {loop.tensor = "x", loop.offset = {{[0-9]+}} : i64} : memref<1x6x6x3xf32, "fast">
// LOOPS-NOT:  loop.tensor = "r"
// LOOPS:      scf.for %tile = %c0 to %c11 step %c1 {
// LOOPS:        %[[SRC:.*]] = memref.subview %x[0, %load_x_lo, 0, %load_x_lo_ax3] [1, %{{.*}}, 6, %{{.*}}]
// LOOPS:        loop.band ins({{.*}}) outs({{.*}}) bounds({{.*}}) cuts [array<i64: 1, 3>, array<i64>, array<i64>, array<i64: 1, 3>] attributes {loop.node = "conv_0"}
// LOOPS:        loop.band ins({{.*}}) outs({{.*}}) bounds({{.*}}) cuts [array<i64: 1, 3>, array<i64: 1, 3>] attributes {loop.node = "relu_1"}
// LOOPS:      } {loop.unit = "stage 0", loop.kind = "strips", loop.channel_group = 3 : i64}

// The C prints the same tables and the tile loop over the groups.
// C:      #define TIGRIS_FAST_ARENA_BYTES 864
// C:      /* stage 0: strips, tiles of 3 channels */
// C-NEXT: for (ptrdiff_t tile = 0; tile < 11; ++tile) {
// C:        const ptrdiff_t load_x_lo_ax3 = (ptrdiff_t)stage0_load_x[tile * 4 + 2];

// The interpreter runs the 11 tiles in the planned peak, equal to the
// untiled reference.
// EXEC: 11 tiles
// EXEC: fast peak: 864
// EXEC: equals the untiled reference
