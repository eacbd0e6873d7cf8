"""Exit codes shared by every command (documented in README and `--help`)."""

from __future__ import annotations

OK = 0
ERROR = 1
USAGE = 2
# find-hanging --exit-code: the scan worked and found hanging transactions.
FOUND = 3
# abort: the transaction was already aborted or completed (nothing left to do).
ALREADY_DONE = 4
# the command worked but some results are missing (broker down, not authorized).
PARTIAL = 5

HELP_TEXT = (
    "Exit codes: 0 success, 1 error, 2 usage error, 3 hanging transactions found "
    "(find-hanging --exit-code), 4 nothing to abort (already aborted or completed), "
    "5 partial results (a broker was unreachable or a resource was not authorized)."
)
