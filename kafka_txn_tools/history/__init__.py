"""The incident history: what every scan saw, kept in one SQLite file that the monitor, `find-hanging --history`,
`kafka-txn history` and `sweep --history` share.

- incidents.py: the rules (pure): a scan's rows as sightings, incidents opened, seen again and ended, how each
  ended (an audited write or by itself), and the exports;
- store.py: the SQLite store (schema version, migrations, the checks at open);
- lock.py: one monitor per history file (the others read).

Above the flows (admin) in the tools' layers: it reads their scan reports, and the monitor and the CLI use it.
"""
