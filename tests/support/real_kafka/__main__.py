"""`python -m tests.support.real_kafka [VERSION...]`: fetch Apache Kafka releases' jars (dev.sh's set-up calls it)."""

import sys

from tests.support.real_kafka.jars import main

raise SystemExit(main(sys.argv[1:]))
