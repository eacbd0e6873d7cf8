"""`kafka-txn monitor`: find-hanging on a schedule, served to Prometheus and people.

- state.py: what the last scans found and how they went (pure transitions, one immutable snapshot);
- metrics.py: the snapshot as Prometheus text (bounded labels);
- page.py: the status page (HTML, inline SVG, no external assets);
- server.py: the HTTP endpoints (/metrics, /healthz, /api/findings, /);
- exporter.py: the scan loop (connect, scan, snapshot, history);
- the incident history lives in kafka_txn_tools/history (store, lock, incidents).
"""
