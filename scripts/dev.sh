#!/usr/bin/env bash
# One entry point for a fresh machine (Python 3.11, root, no venv): installs what is missing, then
#   bash scripts/dev.sh demo    the end-to-end demo on an embedded 3-node cluster
#   bash scripts/dev.sh test    lint (ruff, mypy) and the default test suite
#   bash scripts/dev.sh lint    lint only
set -euo pipefail
cd "$(dirname "$0")/.."

apt_install() {
  # Debian packages, only when missing: a JRE 17 for Spark, kcat, prometheus (prometheus and promtool for
  # the monitor's alert rules and its end-to-end test) and chromium (the status page in a real browser).
  local missing=()
  command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
  command -v kcat >/dev/null 2>&1 || missing+=(kcat)
  { command -v prometheus && command -v promtool; } >/dev/null 2>&1 || missing+=(prometheus)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

pip_install() {
  # Re-install only when pyproject.toml changed since the last successful install.
  local stamp=".setup-stamp" want
  want=$(sha1sum pyproject.toml | cut -d' ' -f1)-$(python3 --version 2>&1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && python3 -c "import kafka_txn_tools, kafka_txn_broker" 2>/dev/null; then
    return
  fi
  echo "setup: pip install -e .[dev,spark] (first run builds pyspark: about a minute)" >&2
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[dev,spark]'
  echo "$want" > "$stamp"
}

lint() {
  python3 -m ruff check .
  python3 -m mypy -p kafka_txn_broker -p kafka_txn_tools
}

cmd=${1:-test}
shift || true
case "$cmd" in
  setup) apt_install; pip_install ;;
  demo) apt_install; pip_install; exec kafka-txn demo "$@" ;;
  # Coverage of both packages with branches, child processes included (pyproject's [tool.coverage]).
  test) apt_install; pip_install; lint; exec python3 -m pytest -q --cov --cov-report=term "$@" ;;
  lint) pip_install; lint ;;
  *) echo "usage: bash scripts/dev.sh demo|test|lint|setup" >&2; exit 2 ;;
esac
