// tigris-analyze shows each body's plan (stages named after its path), its
// share of the budget and whether it fits; --min-budget accounts for bodies.

// RUN: tigris-analyze %S/../Inputs/control_flow_while.onnx -m 4224 -v --min-budget | filecheck %s --check-prefix=TABLE
// TABLE: fits {{.*}} yes
// TABLE: If / Loop bodies {{.*}} 1 (1 fit their share)
// TABLE: smallest budget that fits
// TABLE: stages
// TABLE: s0 {{.*}} transpose_0 .. loop_3 (4)
// TABLE: loop0/body (body of loop_3, while its condition holds): fits
// TABLE: loop0/body/s0 {{.*}} conv_0, relu_1, add_2 {{.*}} strips
// TABLE: chains of loop0/body
// TABLE: loop0/body/c0

// RUN: tigris-analyze %S/../Inputs/control_flow_nested.onnx -m 64K --json --min-budget | filecheck %s --check-prefix=JSON
// JSON:      "fits": true,
// JSON:      "bodies": [
// JSON:          "name": "if0/then",
// JSON-NEXT:     "op": "if_3",
// JSON-NEXT:     "trips": 1,
// JSON:          "fits": true,
// JSON:          "stages": [
// JSON:              "name": "if0/then/s0",
// JSON:          "bodies": [
// JSON:              "name": "if0/then/loop0/body",
// JSON-NEXT:         "op": "loop_0",
// JSON-NEXT:         "trips": 2,
// JSON:              "name": "if0/then/loop0/body/s0",
// JSON:          "name": "if0/else",
// JSON:      "min_budget_bytes": {{[0-9]+}},

// Below the need of a node and its bodies: exit 1, the node and the budget.
// RUN: not tigris-analyze %S/../Inputs/control_flow_nested.onnx -m 1K --json | filecheck %s --check-prefix=NOFIT
// NOFIT:      "fits": false,
// NOFIT:      "not_fitting": [
// NOFIT-NEXT:   "if_3"
// NOFIT:      "not_fitting_min_budget_bytes": {{[0-9]+}},
// NOFIT:      "name": "if0/then",
// NOFIT:      "fits": false,
// NOFIT:      "error": "'if_3' holds 2064 bytes of operands and results, which leaves nothing of the 1024-byte budget to its bodies",
