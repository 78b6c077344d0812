#!/usr/bin/env bash
# The main job on the bundled example model: import it, compile it, show the
# result, run it and check it against the reference and onnxruntime.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
MODEL="${1:-examples/mobilenet_v2_035_int8.onnx}"
BUDGET="${BUDGET:-64K}"
OUT="${OUT:-out}"
mkdir -p "$OUT"
echo "== import $MODEL -> $OUT/model.mlir (weights in $OUT/model.weights.npz)"
tigris-opt "$MODEL" --weights-out "$OUT/model.weights.npz" -o "$OUT/model.mlir"
echo "   $(grep -c '= nn\.' "$OUT/model.mlir") nn ops; first lines:"
grep -m 6 -E 'nn\.(quantize|conv)' "$OUT/model.mlir" | cut -c 1-150 | sed 's/^/   /'
echo "== plan it for a fast memory of $BUDGET: stages, strips, chains, band rows"
tigris-opt "$OUT/model.mlir" --tile-stages=budget="$BUDGET" --fuse-chains --backprop-heights \
  -o "$OUT/model.tiled.mlir"
echo "   $(grep -c 'tile.stage' "$OUT/model.tiled.mlir") stages, $(grep -c 'tile.chain' "$OUT/model.tiled.mlir") chains in $OUT/model.tiled.mlir"
tigris-analyze "$MODEL" -m "$BUDGET" -v
echo "== run the plan tile by tile in a fast arena of the planned size; check it"
tigris-run "$MODEL" -m "$BUDGET" --random-input 0 --check --stats
echo "== print the plan as C ($OUT/model.c, $OUT/model.h), compile it, run it and check it"
tigris-opt "$OUT/model.mlir" --lower-to-loops=budget="$BUDGET" --gebp-tile --lower-gebp --plan-arena -t c -o "$OUT/model.c"
echo "   $(wc -c < "$OUT/model.c") bytes of C;" $(grep -hE 'define TIGRIS_(FAST|SLOW)_ARENA_BYTES' "$OUT/model.h" | cut -d' ' -f2-)
tigris-run "$MODEL" -m "$BUDGET" --random-input 0 --backend c --check --stats
echo "== run the IR with the numpy reference, and the model against onnxruntime"
tigris-run "$OUT/model.mlir" --random-input 0 -o "$OUT/y_ir.npy"
tigris-run "$MODEL" --random-input 0 -o "$OUT/y_onnx.npy" --check
python - "$OUT/y_ir.npy" "$OUT/y_onnx.npy" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
if not np.array_equal(a, b):
    sys.exit("the IR file and the model disagree")
print("IR file and model give identical outputs")
PY
