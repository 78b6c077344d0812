"""Test-suite settings.

Property tests explore new random examples on every local run; under CI (the
`CI` environment variable set) they run hypothesis's derandomized examples, so a
clean checkout of one commit passes or fails the same way every time. A failure
a local run finds becomes an `@example` of its test.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
