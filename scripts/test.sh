#!/usr/bin/env bash
# Every test: ruff (lint), pyright (types), pytest (unit, property-based,
# differential) and the lit/FileCheck suite; the rule sets are in pyproject.toml.
# First the Cortex-M tests' Debian packages when missing (scripts/cross_tools.sh).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cross_tools.sh"
if [[ "${TIGRIS_NO_APT:-0}" != 1 ]]; then
    echo "== cross tools"
    install_cross_tools
fi
echo "== ruff"
ruff check .
echo "== pyright"
pyright
echo "== pytest"
python -m pytest -q -p no:cacheprovider -n auto --dist loadscope tests
echo "== lit"
lit -s tests/lit
