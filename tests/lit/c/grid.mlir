// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; r = np.random.default_rng(0); np.savez('%t/w.npz', w=r.standard_normal((8, 3, 3, 4)).astype(np.float32), b=r.standard_normal(8).astype(np.float32))"
// RUN: sed 's|WEIGHTS|%t/w.npz|' %s | tigris-opt --lower-to-loops=budget=224 --gebp-tile --lower-gebp --plan-arena -t c | filecheck %s

// A 2D grid of tiles, then a GlobalAveragePool accumulated over tiles: the
// loads and spills of a tile's sub-rectangle are one inline copy per row
// (rows of the band are not adjacent in the whole tensor; a run between two
// buffers is copied by tigris_copy_runs, not a call), counted as slow reads
// and writes; the accumulator is zeroed, summed into, then finished.
builtin.module attributes {nn.weights = "WEIGHTS"} {
  func.func @main(%x: tensor<1x16x12x4xf32>) -> tensor<1x1x1x8xf32> {
    %w = nn.weight "w" : tensor<8x3x3x4xf32>
    %b = nn.weight "b" : tensor<8xf32>
    %a = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}
       : (tensor<1x16x12x4xf32>, tensor<8x3x3x4xf32>, tensor<8xf32>) -> tensor<1x16x12x8xf32>
    %r = nn.relu %a : (tensor<1x16x12x8xf32>) -> tensor<1x16x12x8xf32>
    %g = nn.global_average_pool %r : (tensor<1x16x12x8xf32>) -> tensor<1x1x1x8xf32>
    func.return %g : tensor<1x1x1x8xf32>
  }
}

// CHECK:      #define TIGRIS_FAST_ARENA_BYTES {{[0-9]+}}
// CHECK:      static const int16_t stage0_load_x[{{[0-9]+}}] TIGRIS_FLASH = {
// CHECK:      static inline void tigris_copy_runs(void *restrict dst, const void *restrict src, size_t n)
// CHECK:      /* input 'arg0': float 1x16x12x4, plain */
// CHECK:        memcpy(x, inputs_arg0, 3072);
// CHECK:      /* stage 0: grid, tiles */
// CHECK-NEXT: for (ptrdiff_t tile = 0; tile < [[TILES:[0-9]+]]; ++tile) {
// CHECK-NEXT:   TIGRIS_STAT_TILE();
// CHECK:        const ptrdiff_t load_x_lo_ax2 = (ptrdiff_t)stage0_load_x[tile * 4 + 2];
// CHECK:        float *[[SRC:v[_0-9]*]] = x + load_x_lo * 48 + load_x_lo_ax2 * 4;
// CHECK:        float *[[DST:v[_0-9]*]] = x_1 + (load_x_lo - held_x_lo) * [[ROW:[0-9]+]] + (load_x_lo_ax2 - held_x_lo_ax2) * 4;
// CHECK:          TIGRIS_STAT_READ((((load_x_hi - load_x_lo) * (load_x_hi_ax2 - load_x_lo_ax2)) * 4) * (sizeof(float)));
// CHECK-NEXT:     for (ptrdiff_t [[I:i1[_0-9]*]] = 0; [[I]] < (load_x_hi - load_x_lo); ++[[I]]) {
// CHECK-NEXT:       tigris_copy_runs([[DST]] + [[I]] * [[ROW]], [[SRC]] + [[I]] * 48, (size_t)(4 * (load_x_hi_ax2 - load_x_lo_ax2)) * sizeof(float));
// CHECK:        /* loop.band nn.conv -> 'a' */
// CHECK-NEXT:   if (out_conv0_hi > out_conv0_lo && out_conv0_hi_ax2 > out_conv0_lo_ax2) {
// CHECK:          TIGRIS_STAT_WRITE(
// CHECK:        double *g_acc = (double *)(void *)(tigris_fast_arena + {{[0-9]+}});
// CHECK:          for (ptrdiff_t [[K:i3[_0-9]*]] = 0; [[K]] < 8; ++[[K]]) {
// CHECK-NEXT:       g_acc[[[K]]] = (double)0.0f;
// CHECK:      /* stage 1: accumulate, tiles */
// CHECK:        /* loop.accumulate nn.global_average_pool -> 'g' */
// CHECK:      /* loop.finish nn.global_average_pool -> 'g' */
