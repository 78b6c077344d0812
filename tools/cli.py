"""What every TiGrIS command line shares: one diagnostic per user error, exit 1.

A user never sees a traceback for bad input: usage errors, import diagnostics,
parse errors and verifier/pass diagnostics print one message on stderr. Any
other exception is an internal error, reported in one line too, with the
hint to set TIGRIS_TRACEBACK=1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


class UserError(Exception):
    """A bad command line or input, printed as `PROG: error: ...`."""


def run_main(prog: str, body: Callable[[], int]) -> int:
    """Run a command's body and turn every failure into one line and exit 1."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from tigris_ir.frontend.onnx_import import ImportDiagnostic
    from tigris_ir.reference.executor import ReferenceError_

    try:
        return body()
    except SystemExit as e:  # argparse: usage errors exit 2, --help/--version 0
        code = e.code if isinstance(e.code, int) else 1
        return 0 if code == 0 else 1
    except (UserError, ReferenceError_, OSError, UnicodeDecodeError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except (ImportDiagnostic, ParseError) as e:
        print(str(e).rstrip(), file=sys.stderr)
        return 1
    except DiagnosticException as e:
        print(str(e).rstrip(), file=sys.stderr)
        for note in getattr(e, "__notes__", []):
            print(note, file=sys.stderr)
        return 1
    except Exception as e:
        if os.environ.get("TIGRIS_TRACEBACK"):
            raise
        print(
            f"{prog}: internal error: {type(e).__name__}: {e} "
            "(set TIGRIS_TRACEBACK=1 for a traceback)",
            file=sys.stderr,
        )
        return 1
