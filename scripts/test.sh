#!/usr/bin/env bash
# Every test: pytest (unit, property-based, differential) and the lit/FileCheck suite.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
echo "== pytest"
python -m pytest -q -p no:cacheprovider tests
echo "== lit"
lit -s tests/lit
