"""The differential fidelity suite: the same request sequences sent to real Apache Kafka and to the embedded
broker emulating that release, answers compared field by field (cases.py, runner.py, report.py)."""
