"""The exporter's printer (tools/export/coil_export): installed beside this package by the
wheel, or found in the source tree when the package is used from a checkout."""
import os
import sys

try:
    import coil_export
except ImportError:
    _src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "export")
    if not os.path.isfile(os.path.join(_src, "coil_export", "__init__.py")):
        raise
    sys.path.insert(0, os.path.normpath(_src))
    import coil_export  # noqa: E402

__all__ = ["coil_export"]
