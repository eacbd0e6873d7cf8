"""Exit codes shared by every command (documented in README and `--help`)."""

from __future__ import annotations

OK = 0
# an error, a refusal (nothing was written), or a cancelled confirmation
ERROR = 1
USAGE = 2
# find-hanging --exit-code: the scan was complete and found hanging transactions.
FOUND = 3
# abort / force-terminate: nothing left to do (already aborted or completed, or unknown id).
ALREADY_DONE = 4
# the command worked but some results are missing (broker down, not authorized). It wins over 3:
# `find-hanging --exit-code` exits 5 when it found hanging transactions in an incomplete scan.
PARTIAL = 5
# the cluster lacks an API the command needs (Kafka before 2.8/3.0, or a Kafka-compatible broker
# without the KIP-664 admin APIs); the message names the API.
UNSUPPORTED = 6

HELP_TEXT = (
    "Exit codes: 0 success; 1 error, refusal or cancel (nothing was written); 2 usage error; 3 hanging "
    "transactions found (find-hanging --exit-code); 4 nothing to do (already aborted or completed); 5 partial "
    "results (a broker unreachable or a resource not authorized; wins over 3); 6 the cluster lacks an API the "
    "command needs."
)
