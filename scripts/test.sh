#!/usr/bin/env bash
# Every test: ruff (lint), pyright (types), pytest (unit, property-based,
# differential) and the lit/FileCheck suite; the rule sets are in pyproject.toml.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
echo "== ruff"
ruff check .
echo "== pyright"
pyright
echo "== pytest"
python -m pytest -q -p no:cacheprovider -n auto --dist loadscope tests
echo "== lit"
lit -s tests/lit
