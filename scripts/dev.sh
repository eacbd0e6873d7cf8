#!/usr/bin/env bash
# One entry point for a fresh machine (Python 3.11, root, no venv): installs what is missing, then
#   bash scripts/dev.sh demo    the end-to-end demo on an embedded 3-node cluster
#   bash scripts/dev.sh test    lint (ruff, mypy, the layering contracts) and the full test suite (CI runs it)
#   bash scripts/dev.sh test-fast   ruff and the unit tier only (under 2 minutes)
#   bash scripts/dev.sh lint    lint only
#   bash scripts/dev.sh test-kafka-matrix [pytest args]
#                               tests/external/real_kafka once per tested Apache Kafka release (docs/compatibility.md)
#   bash scripts/dev.sh setup   the tests' set-up only (apt and pip packages, npm, real Kafka's jars)
set -euo pipefail
cd "$(dirname "$0")/.."

apt_install() {
  # Debian packages, only when missing. $1 = demo: a JRE 17 (the demo's sweep step runs Spark); nothing else.
  # $1 = test adds what the tests run for real: kcat and maven (the real Apache Kafka's jars); MIT Kerberos (a
  # KDC the GSSAPI tests start, kinit, and the headers the Python gssapi package builds against); libfaketime
  # (a KDC whose clock is off, for the clock-skew test); node and npm (the OpenID provider of the OAUTHBEARER
  # tests); prometheus (prometheus and promtool for the monitor's alert rules and its end-to-end test) and
  # chromium (the status page in a real browser).
  local missing=()
  command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
  if [ "$1" = test ]; then
    command -v kcat >/dev/null 2>&1 || missing+=(kcat)
    command -v mvn >/dev/null 2>&1 || missing+=(maven)
    [ -x /usr/sbin/krb5kdc ] || missing+=(krb5-kdc)
    [ -x /usr/sbin/kadmin.local ] || missing+=(krb5-admin-server)
    command -v kinit >/dev/null 2>&1 || missing+=(krb5-user)
    [ -x /usr/bin/krb5-config ] || missing+=(libkrb5-dev)
    [ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || [ "$(uname -m)" != x86_64 ] || missing+=(faketime)
    command -v node >/dev/null 2>&1 || missing+=(nodejs)
    command -v npm >/dev/null 2>&1 || missing+=(npm)
    { command -v prometheus && command -v promtool; } >/dev/null 2>&1 || missing+=(prometheus)
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# The extras each command installs: the demo's (its librdkafka clients and Spark) and the tests' (everything).
DEMO_EXTRAS=demo,spark
TEST_EXTRAS=dev,spark,kerberos

pip_install() {
  # pip install -e .[$1], again only when pyproject.toml changed since the last successful install of these
  # extras or of the tests' (which hold the demo's). $2: modules that must import afterwards.
  local extras=$1 modules=$2 stamp=".setup-stamp" want
  want=$(sha1sum pyproject.toml | cut -d' ' -f1)-$(python3 --version 2>&1 | tr ' ' _)
  if [ -f "$stamp" ] && { grep -qxF "$extras $want" "$stamp" || grep -qxF "$TEST_EXTRAS $want" "$stamp"; } \
      && python3 -c "import $modules" 2>/dev/null; then
    return
  fi
  echo "setup: pip install -e .[$extras] (a first run builds pyspark$([ "$extras" = "$TEST_EXTRAS" ] && echo ' and gssapi'): a minute or two)" >&2
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[$extras]"
  { grep -F " $want" "$stamp" 2>/dev/null || true; echo "$extras $want"; } > "$stamp.new" && mv "$stamp.new" "$stamp"
}

test_setup() {
  apt_install test
  pip_install "$TEST_EXTRAS" "kafka_txn_tools, kafka_txn_broker, confluent_kafka, gssapi, pyspark, xdist"
}

npm_install() {
  # The OAUTHBEARER tests' OpenID provider (tests/oidc): its locked npm packages, when missing or changed.
  local dir=tests/oidc stamp=tests/oidc/node_modules/.setup-stamp want
  want=$(sha1sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return
  fi
  echo "setup: npm ci in $dir" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$want" > "$stamp"
}

kafka_jars() {
  # Real Apache Kafka for the tests (tests/support/real_kafka): the default release's jars from Maven Central,
  # into ~/.cache/kafka-txn-tools/kafka/ (once; the tests fetch any other release on first use).
  python3 -m tests.support.real_kafka
}

lint() {
  python3 -m ruff check .
  python3 -m mypy -p kafka_txn_broker -p kafka_txn_tools
  # The layering contracts of pyproject.toml's [tool.importlinter] (docs/architecture.md).
  lint-imports --no-cache --no-logo
}

kafka_matrix() {
  # Every release of tests.support.real_kafka.RELEASES in turn (the default run tests only the newest); each
  # release's jars are fetched on first use. Exits non-zero if any release failed, after running them all.
  local failed=() release
  for release in $(python3 -c 'from tests.support.real_kafka import RELEASES; print(*RELEASES)'); do
    echo "== Apache Kafka $release" >&2
    python3 -m tests.support.real_kafka "$release" >/dev/null
    KAFKA_TXN_KAFKA_RELEASE=$release python3 -m pytest -q -p no:cacheprovider tests/external/real_kafka "$@" \
      || failed+=("$release")
  done
  [ ${#failed[@]} -eq 0 ] || { echo "test-kafka-matrix: failed on ${failed[*]}" >&2; return 1; }
}

cmd=${1:-test}
shift || true
case "$cmd" in
  setup) test_setup; npm_install; kafka_jars ;;
  demo) apt_install demo; pip_install "$DEMO_EXTRAS" "kafka_txn_tools, kafka_txn_broker, confluent_kafka, pyspark"
        exec kafka-txn demo "$@" ;;
  # The full run CI calls: every tier, coverage of both packages with branches, child processes included
  # (pyproject's [tool.coverage]), and the 25 slowest tests at the end. Two workers (KAFKA_TXN_TEST_WORKERS
  # changes it; 0 runs serially), each taking whole modules: tests/support/parallel.py.
  test) test_setup; npm_install; kafka_jars; lint
        exec python3 -m pytest -q --cov --cov-report=term --durations=25 \
          -n "${KAFKA_TXN_TEST_WORKERS:-2}" --dist loadscope "$@" ;;
  # A developer's loop: ruff and the unit tier (no server, no broker, no child process; docs/contributing.md).
  # tests/e2e and tests/external hold no unit test: not even collected.
  test-fast) test_setup; python3 -m ruff check .
             exec python3 -m pytest -q -m unit --ignore=tests/e2e --ignore=tests/external "$@" ;;
  lint) test_setup; lint ;;
  test-kafka-matrix) test_setup; kafka_matrix "$@" ;;
  # The embedded broker against real Apache Kafka, case by case (docs/broker.md#fidelity-against-apache-kafka):
  # `fidelity [--release 3.9.2] [--markdown]`.
  fidelity) kafka_jars; exec python3 -m tests.external.fidelity.report "$@" ;;
  *) echo "usage: bash scripts/dev.sh demo|test|test-fast|lint|setup|test-kafka-matrix|fidelity" >&2; exit 2 ;;
esac
