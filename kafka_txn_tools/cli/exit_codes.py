"""Exit codes shared by every command (documented in README, docs/abort-and-plans.md and `--help`).

One meaning per code in `kafka-txn`. `kafka-transactions` keeps upstream's: 0, and 1 for every failure,
malformed input included (TransactionsCommand's, which runbooks written for it test).
"""

from __future__ import annotations

OK = 0
# a failure, a refusal from live state, or a cancelled confirmation: nothing was written
ERROR = 1
# malformed input: an argument, a file, an identifier out of its range (known wrong without asking the cluster)
USAGE = 2
# find-hanging --exit-code: the scan was complete and found hanging transactions.
FOUND = 3
# abort: nothing left to do, with evidence (a marker after the transaction's start offset; in the
# legacy form, a marker that ended the producer's last transaction on the partition).
ALREADY_DONE = 4
# the command worked but some results are missing (broker down, not authorized). It wins over 3:
# `find-hanging --exit-code` exits 5 when it found hanging transactions in an incomplete scan.
PARTIAL = 5
# the cluster lacks an API the command needs (Kafka before 2.8/3.0, or a Kafka-compatible broker
# without the KIP-664 admin APIs); the message names the API.
UNSUPPORTED = 6
# abort --plan: the plan was applied in part. With --skip-refused, its valid entries were written and the
# refused ones were not; or a marker failed after others of the plan were written. The output says which.
# (--dry-run exits as the write would.)
PARTLY_APPLIED = 7

HELP_TEXT = (
    "Exit codes: 0 success; 1 error, refusal from live state or cancel (nothing was written); 2 malformed input "
    "(usage); 3 hanging transactions found (find-hanging --exit-code); 4 nothing to do (already aborted or "
    "committed: a marker shows it); 5 partial results (a broker unreachable or a resource not authorized; wins "
    "over 3); 6 the cluster lacks an API the command needs; 7 a plan applied in part (abort --plan "
    "--skip-refused wrote the valid entries, or a marker failed after others were written)."
)
