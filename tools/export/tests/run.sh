#!/bin/bash
# CTest export_tests: the exporter's tests (tools/export/tests/test_export.py) with $COIL set to
# this build's coil. Exit 77 (skipped) where there is no python3.
# Usage: run.sh COIL SOURCE_DIR
command -v python3 >/dev/null || { echo "skipped: no python3 on this machine"; exit 77; }
COIL=$1 exec python3 "$2/tools/export/tests/test_export.py" -v
