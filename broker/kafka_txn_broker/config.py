"""Broker configuration under Kafka's own property names, with Kafka's defaults where they fit here.

Values come from a YAML file (flat `key: value` or nested maps joined with dots) and `--set key=value`
overrides. Unknown keys are rejected with the list of known ones, so a typo never silently does nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kafka_txn_broker.apis.registry import kafka_releases
from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS

_BOOL_TRUE = {"true", "yes", "1", "on"}
_BOOL_FALSE = {"false", "no", "0", "off"}


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: type
    default: Any
    doc: str
    # Allowed values of a str key, compared case-insensitively and stored as written here.
    choices: tuple[str, ...] = ()
    # The smallest value of an int key (Kafka's ConfigDef.Range.atLeast), None for no bound.
    minimum: int | None = None


_KEYS: list[ConfigKey] = [
    ConfigKey("num.partitions", int, 1, "partitions of auto-created topics"),
    ConfigKey("default.replication.factor", int, 1, "replication factor of auto-created topics (capped at node count)"),
    ConfigKey("auto.create.topics.enable", bool, True, "create a topic on first Metadata/Produce for it"),
    ConfigKey("log.segment.bytes", int, 1024 * 1024 * 1024, "roll a segment at this size"),
    ConfigKey("log.roll.ms", int, 7 * 24 * 3600 * 1000, "roll a segment when its first batch is this old"),
    ConfigKey("log.index.interval.bytes", int, 4096, "bytes between offset index entries"),
    ConfigKey("log.flush.interval.messages", int, 2**63 - 1, "fsync after this many messages"),
    ConfigKey("log.flush.interval.ms", int, 2**63 - 1, "fsync when unflushed data is this old"),
    ConfigKey("log.retention.check.interval.ms", int, 300000,
              "how often segments wholly below a log's start offset (DeleteRecords) are deleted"),
    ConfigKey("unclean.leader.election.enable", bool, False,
              "let an out-of-sync replica lead a partition whose in-sync replicas are all down (data loss)"),
    ConfigKey("auto.leader.rebalance.enable", bool, True,
              "move leadership back to the preferred replica when its node comes back"),
    # kafka-reassign-partitions.sh --throttle sets these and --verify deletes them: kept and described; the
    # in-process replication is not throttled.
    ConfigKey("leader.replication.throttled.rate", int, 2**63 - 1,
              "replication throttle of leaders, bytes/s (stored only: replication here is not throttled)"),
    ConfigKey("follower.replication.throttled.rate", int, 2**63 - 1,
              "replication throttle of followers, bytes/s (stored only: replication here is not throttled)"),
    ConfigKey("replica.alter.log.dirs.io.max.bytes.per.second", int, 2**63 - 1,
              "log dir move throttle, bytes/s (stored only: one log dir per node)"),
    # ---- log compaction (kafka_txn_broker/log/cleaner.py, cleaner_manager.py); topics override with the names
    # in parentheses: min.cleanable.dirty.ratio, delete.retention.ms, min.compaction.lag.ms ----
    ConfigKey("log.cleaner.enable", bool, True, "compact the logs of topics with cleanup.policy=compact"),
    ConfigKey("log.cleaner.backoff.ms", int, 15000, "how often the cleaner looks for a log to compact"),
    ConfigKey("log.cleaner.min.cleanable.ratio", float, 0.5,
              "compact a log once this share of its cleanable bytes is dirty (min.cleanable.dirty.ratio)"),
    ConfigKey("log.cleaner.delete.retention.ms", int, 86400000,
              "keep tombstones this long after their segment was first cleaned (delete.retention.ms)"),
    ConfigKey("log.cleaner.min.compaction.lag.ms", int, 0,
              "never compact records younger than this (min.compaction.lag.ms)"),
    ConfigKey("message.max.bytes", int, 1048588, "largest record batch accepted"),
    ConfigKey("socket.request.max.bytes", int, 104857600, "largest request frame accepted"),
    ConfigKey("producer.id.expiration.ms", int, 86400000, "forget idle producers after this"),
    ConfigKey("producer.id.expiration.check.interval.ms", int, 600000, "how often idle producers are removed"),
    ConfigKey("min.insync.replicas", int, 1, "acks=all needs this many in-sync replicas"),
    ConfigKey("replica.lag.time.max.ms", int, 30000, "drop a follower from the ISR after this lag"),
    ConfigKey("offsets.topic.num.partitions", int, 50, "partitions of __consumer_offsets"),
    ConfigKey("offsets.topic.replication.factor", int, 3, "replication factor of __consumer_offsets (capped)"),
    ConfigKey("offsets.topic.segment.bytes", int, 104857600, "segment size of __consumer_offsets"),
    ConfigKey("group.initial.rebalance.delay.ms", int, 0, "wait before the first rebalance of a new group"),
    ConfigKey("group.min.session.timeout.ms", int, 6000, "smallest session timeout a member may ask for"),
    ConfigKey("group.max.session.timeout.ms", int, 1800000, "largest session timeout a member may ask for"),
    # ---- group coordinator (KIP-848 consumer, KIP-932 share, KIP-1071 streams groups): defaults of the
    # group configs (configs/group_config.py) and the bounds a group's own value must lie within ----
    ConfigKey("group.consumer.session.timeout.ms", int, 45000,
              "session timeout of consumer groups (a group sets consumer.session.timeout.ms)"),
    ConfigKey("group.consumer.min.session.timeout.ms", int, 45000,
              "smallest consumer.session.timeout.ms a group may set"),
    ConfigKey("group.consumer.max.session.timeout.ms", int, 60000,
              "largest consumer.session.timeout.ms a group may set"),
    ConfigKey("group.consumer.heartbeat.interval.ms", int, 5000,
              "heartbeat interval of consumer groups (a group sets consumer.heartbeat.interval.ms)"),
    ConfigKey("group.consumer.min.heartbeat.interval.ms", int, 5000,
              "smallest consumer.heartbeat.interval.ms a group may set"),
    ConfigKey("group.consumer.max.heartbeat.interval.ms", int, 15000,
              "largest consumer.heartbeat.interval.ms a group may set"),
    ConfigKey("group.consumer.assignment.interval.ms", int, 1000,
              "interval between assignment updates of consumer groups (a group sets consumer.assignment.interval.ms)"),
    ConfigKey("group.consumer.min.assignment.interval.ms", int, 0,
              "smallest consumer.assignment.interval.ms a group may set"),
    ConfigKey("group.consumer.max.assignment.interval.ms", int, 15000,
              "largest consumer.assignment.interval.ms a group may set"),
    ConfigKey("group.consumer.max.size", int, 2**31 - 1,
              "members a consumer group may have (GROUP_MAX_SIZE_REACHED beyond; a static member replacing its "
              "own instance id is not a new one)", minimum=1),
    ConfigKey("group.share.session.timeout.ms", int, 45000,
              "session timeout of share groups (a group sets share.session.timeout.ms)"),
    ConfigKey("group.share.min.session.timeout.ms", int, 45000, "smallest share.session.timeout.ms a group may set"),
    ConfigKey("group.share.max.session.timeout.ms", int, 60000, "largest share.session.timeout.ms a group may set"),
    ConfigKey("group.share.heartbeat.interval.ms", int, 5000,
              "heartbeat interval of share groups (a group sets share.heartbeat.interval.ms)"),
    ConfigKey("group.share.min.heartbeat.interval.ms", int, 5000,
              "smallest share.heartbeat.interval.ms a group may set"),
    ConfigKey("group.share.max.heartbeat.interval.ms", int, 15000,
              "largest share.heartbeat.interval.ms a group may set"),
    ConfigKey("group.share.assignment.interval.ms", int, 1000,
              "interval between assignment updates of share groups (a group sets share.assignment.interval.ms)"),
    ConfigKey("group.share.min.assignment.interval.ms", int, 0,
              "smallest share.assignment.interval.ms a group may set"),
    ConfigKey("group.share.max.assignment.interval.ms", int, 15000,
              "largest share.assignment.interval.ms a group may set"),
    ConfigKey("group.streams.session.timeout.ms", int, 45000,
              "session timeout of streams groups (a group sets streams.session.timeout.ms)"),
    ConfigKey("group.streams.min.session.timeout.ms", int, 45000,
              "smallest streams.session.timeout.ms a group may set"),
    ConfigKey("group.streams.max.session.timeout.ms", int, 60000, "largest streams.session.timeout.ms a group may set"),
    ConfigKey("group.streams.heartbeat.interval.ms", int, 5000,
              "heartbeat interval of streams groups (a group sets streams.heartbeat.interval.ms)"),
    ConfigKey("group.streams.min.heartbeat.interval.ms", int, 5000,
              "smallest streams.heartbeat.interval.ms a group may set"),
    ConfigKey("group.streams.max.heartbeat.interval.ms", int, 15000,
              "largest streams.heartbeat.interval.ms a group may set"),
    ConfigKey("group.streams.assignment.interval.ms", int, 1000,
              "interval between assignment updates of streams groups (a group sets streams.assignment.interval.ms)"),
    ConfigKey("group.streams.min.assignment.interval.ms", int, 0,
              "smallest streams.assignment.interval.ms a group may set"),
    ConfigKey("group.streams.max.assignment.interval.ms", int, 15000,
              "largest streams.assignment.interval.ms a group may set"),
    ConfigKey("group.share.record.lock.duration.ms", int, 30000,
              "how long a member holds acquired records (a group sets share.record.lock.duration.ms)"),
    ConfigKey("group.share.min.record.lock.duration.ms", int, 15000,
              "smallest share.record.lock.duration.ms a group may set"),
    ConfigKey("group.share.max.record.lock.duration.ms", int, 60000,
              "largest share.record.lock.duration.ms a group may set"),
    ConfigKey("group.share.delivery.count.limit", int, 5,
              "deliveries of a record before it is archived (a group sets share.delivery.count.limit)"),
    ConfigKey("group.share.min.delivery.count.limit", int, 2, "smallest share.delivery.count.limit a group may set"),
    ConfigKey("group.share.max.delivery.count.limit", int, 10, "largest share.delivery.count.limit a group may set"),
    ConfigKey("group.share.partition.max.record.locks", int, 2000,
              "records in flight per share partition (a group sets share.partition.max.record.locks)"),
    ConfigKey("group.share.min.partition.max.record.locks", int, 100,
              "smallest share.partition.max.record.locks a group may set"),
    ConfigKey("group.share.max.partition.max.record.locks", int, 4000,
              "largest share.partition.max.record.locks a group may set"),
    ConfigKey("group.share.max.size", int, 200, "members a share group may have (GROUP_MAX_SIZE_REACHED beyond)"),
    ConfigKey("group.share.max.share.sessions", int, 2000,
              "share sessions one broker keeps (SHARE_SESSION_LIMIT_REACHED beyond)"),
    # ---- share coordinator: __share_group_state (kafka_txn_broker/share/) ----
    ConfigKey("share.coordinator.state.topic.num.partitions", int, 50, "partitions of __share_group_state"),
    ConfigKey("share.coordinator.state.topic.replication.factor", int, 3,
              "replication factor of __share_group_state (capped)"),
    ConfigKey("share.coordinator.state.topic.segment.bytes", int, 104857600, "segment size of __share_group_state"),
    ConfigKey("share.coordinator.snapshot.update.records.per.snapshot", int, 500,
              "ShareUpdate records of a share-partition between two ShareSnapshot records"),
    ConfigKey("share.coordinator.state.topic.prune.interval.ms", int, 300000,
              "how often the share coordinator deletes the __share_group_state records replay no longer needs",
              minimum=1),
    ConfigKey("share.coordinator.cold.partition.snapshot.interval.ms", int, 300000,
              "how often the share coordinator writes a new ShareSnapshot of each share-partition whose latest "
              "snapshot is this old (so an idle one does not hold back pruning)", minimum=1),
    ConfigKey("group.streams.num.standby.replicas", int, 0, "standby replicas per task of streams groups"),
    ConfigKey("group.streams.max.standby.replicas", int, 2, "largest streams.num.standby.replicas a group may set"),
    ConfigKey("group.streams.initial.rebalance.delay.ms", int, 3000, "wait before a new streams group's first "
              "assignment (streams.initial.rebalance.delay.ms per group)"),
    ConfigKey("transaction.state.log.num.partitions", int, 50, "partitions of __transaction_state"),
    ConfigKey("transaction.state.log.replication.factor", int, 3, "replication factor of __transaction_state"),
    ConfigKey("transaction.state.log.segment.bytes", int, 104857600, "segment size of __transaction_state"),
    ConfigKey("transaction.max.timeout.ms", int, DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
              "largest transaction.timeout.ms a producer may ask for"),
    ConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", int, 10000, "timeout reaper period"),
    ConfigKey("transactional.id.expiration.ms", int, 604800000, "expire idle transactional ids after this"),
    ConfigKey("transaction.remove.expired.transaction.cleanup.interval.ms", int, 3600000, "expiry check period"),
    ConfigKey("transaction.partition.verification.enable", bool, True, "leader verifies with the coordinator"),
    ConfigKey("transaction.version", int, 2, "highest transaction version (1 = TV1, 2 = TV2) advertised"),
    ConfigKey("share.transactional.acknowledgement.enable", bool, False,
              "KIP-1289 TxnShareAcknowledge: stands in for the share.version >= 2 feature level; advertised and "
              "served only with transaction.version >= 2 as well"),
    ConfigKey("transaction.two.phase.commit.enable", bool, False,
              "accept two-phase-commit transactions (KIP-939, InitProducerId v6 Enable2Pc): no timeout, an external "
              "transaction manager ends them; when false, Enable2Pc gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    # ---- TEST ONLY: emulate an upstream bug, to rehearse its incident (kafka_txn_broker/txn/faults.py) ----
    ConfigKey("fault.injection", str, "", "TEST ONLY, never in production: behave as Apache Kafka did before the "
              "named fix. KAFKA-19999: a marker's response is lost once and every same-epoch retry is rejected "
              "(TV2), leaving the transaction in PREPARE_*; KAFKA-20090: no producer id rotation when a fence "
              "aborts at epoch exhaustion, and a fence at Short.MAX_VALUE fails, leaving it Ongoing",
              ("", "KAFKA-19999", "KAFKA-20090")),
    ConfigKey("fault.injection.transactional.id.prefix", str, "",
              "TEST ONLY: fault.injection applies to transactional ids starting with this (empty: all)"),
    ConfigKey("kafka.version.emulate", str, "", "advertise and accept only the API versions of this Apache Kafka "
              "release (e.g. 2.8, 3.0, 3.8, 4.0, 4.1), as it would; empty: everything this broker implements",
              ("", *kafka_releases())),
    ConfigKey("producer.id.block.size", int, 1000, "producer ids reserved per allocation"),
    ConfigKey("cluster.id", str, "kafka-txn-embedded", "cluster id reported in Metadata"),
    ConfigKey("host", str, "127.0.0.1", "address the listeners bind and advertise"),
    # ---- security (kafka_txn_broker/security/: auth.py, tls.py, sasl.py, authorizer.py) ----
    ConfigKey("security.protocol", str, "PLAINTEXT", "protocol of every node's listener",
              ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    ConfigKey("ssl.keystore.type", str, "PEM", "only PEM (convert JKS/PKCS12 with openssl)"),
    ConfigKey("ssl.keystore.location", str, "", "PEM file with the broker's private key and certificate chain"),
    ConfigKey("ssl.keystore.certificate.chain", str, "", "certificate chain: PEM text or a PEM file's path"),
    ConfigKey("ssl.keystore.key", str, "", "private key: PEM text or a PEM file's path"),
    ConfigKey("ssl.key.password", str, "", "password of an encrypted private key"),
    ConfigKey("ssl.truststore.type", str, "PEM", "only PEM"),
    ConfigKey("ssl.truststore.location", str, "", "PEM file of the CAs that sign client certificates"),
    ConfigKey("ssl.truststore.certificates", str, "", "CA certificates: PEM text or a PEM file's path"),
    ConfigKey("ssl.client.auth", str, "none", "client certificates: none, requested or required",
              ("none", "requested", "required")),
    ConfigKey("sasl.enabled.mechanisms", str, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
              "SASL mechanisms offered (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI, OAUTHBEARER)"),
    ConfigKey("sasl.users", list, (), "SASL users of PLAIN and SCRAM: a list (or comma-separated) of name:password, "
              "or a map name: password; secrets, keep them in a --config file readable only by you"),
    # ---- SASL/GSSAPI (security/gssapi.py) and SASL/OAUTHBEARER (security/oauthbearer.py), Kafka's names ----
    ConfigKey("sasl.kerberos.service.name", str, "", "GSSAPI: the first component of the broker's principal"),
    ConfigKey("sasl.kerberos.principal.to.local.rules", list, ("DEFAULT",),
              "GSSAPI: Kerberos principal -> Kafka principal; DEFAULT (the short name, broker's realm only)"),
    *(ConfigKey(f"listener.name.{listener}.{mechanism}.sasl.jaas.config", str, "",
                f"{mechanism.upper()} on a {listener.upper()} listener: the JAAS line ("
                + ('Krb5LoginModule with keyTab and principal' if mechanism == 'gssapi' else 'OAuthBearerLoginModule')
                + ")")
      for listener in ("sasl_plaintext", "sasl_ssl") for mechanism in ("gssapi", "oauthbearer")),
    *(ConfigKey(f"listener.name.{listener}.oauthbearer.sasl.server.callback.handler.class", str, "",
                "OAUTHBEARER: OAuthBearerValidatorCallbackHandler (tokens checked against the JWKS)")
      for listener in ("sasl_plaintext", "sasl_ssl")),
    ConfigKey("sasl.oauthbearer.jwks.endpoint.url", str, "",
              "OAUTHBEARER: the identity provider's JWKS (https:, http: or file:), the keys tokens are signed with"),
    ConfigKey("sasl.oauthbearer.jwks.endpoint.refresh.ms", int, 3600000,
              "OAUTHBEARER: how long fetched keys are used before fetching them again (an unknown key id "
              "fetches at once)", minimum=0),
    ConfigKey("sasl.oauthbearer.expected.issuer", str, "", "OAUTHBEARER: the `iss` tokens must have (empty: any)"),
    ConfigKey("sasl.oauthbearer.expected.audience", list, (),
              "OAUTHBEARER: `aud` must include one of these (empty: any)"),
    ConfigKey("sasl.oauthbearer.sub.claim.name", str, "sub", "OAUTHBEARER: the claim that names the principal"),
    ConfigKey("sasl.oauthbearer.scope.claim.name", str, "scope", "OAUTHBEARER: the claim that holds the scopes"),
    ConfigKey("sasl.oauthbearer.clock.skew.seconds", int, 30,
              "OAUTHBEARER: tolerance of exp, nbf and iat against the broker's clock", minimum=0),
    ConfigKey("sasl.scram.iterations", int, 4096, "PBKDF2 iterations of the SCRAM credentials (at least 4096)"),
    ConfigKey("sasl.server.max.receive.size", int, 524288, "largest request accepted before authentication"),
    ConfigKey("authorizer.class.name", str, "", "empty: no authorization; 'acl' or "
              "kafka.security.authorizer.AclAuthorizer: ACLs"),
    ConfigKey("allow.everyone.if.no.acl.found", bool, False, "allow access to resources no ACL applies to"),
    ConfigKey("super.users", str, "", "principals allowed everything, ';'-separated: User:admin;User:ops"),
    ConfigKey("authorizer.acls", list, (), "ACLs from the config, e.g. 'User:alice ALLOW Read Topic orders' "
              "(see kafka_txn_broker/security/acls.py); CreateAcls adds more, kept in <data-dir>/acls.json"),
]

KEYS: dict[str, ConfigKey] = {k.name: k for k in _KEYS}


class ConfigError(ValueError):
    """A configuration value or key is wrong; the message names it and the fix."""


def _coerce(key: ConfigKey, value: Any) -> Any:
    if key.type is list:
        return _coerce_list(key, value)
    if key.type is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _BOOL_TRUE:
            return True
        if text in _BOOL_FALSE:
            return False
        raise ConfigError(f"{key.name}={value!r} is not a boolean: use true or false")
    if key.type is float:
        return _coerce_float(key, value)
    if key.type is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key.name}={value!r} is not an integer")
        return _coerce_int(key, value)
    text = str(value)
    if key.choices:
        chosen = [c for c in key.choices if c.lower() == text.strip().lower()]
        if not chosen:
            raise ConfigError(f"{key.name}={text!r} is not one of {', '.join(key.choices)}")
        return chosen[0]
    return text


def _coerce_int(key: ConfigKey, value: Any) -> int:
    try:
        number = int(str(value).strip().replace("_", ""))
    except ValueError:
        raise ConfigError(f"{key.name}={value!r} is not an integer") from None
    if key.minimum is not None and number < key.minimum:
        raise ConfigError(f"{key.name}={number} must be at least {key.minimum}")
    return number


def _coerce_float(key: ConfigKey, value: Any) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"{key.name}={value!r} is not a number")
    try:
        return float(str(value).strip())
    except ValueError:
        raise ConfigError(f"{key.name}={value!r} is not a number, e.g. 0.5") from None


def _coerce_list(key: ConfigKey, value: Any) -> tuple[Any, ...]:
    """A YAML list, a comma-separated string, or (sasl.users style) a map of name: value pairs.
    The values may be secrets, so errors never show them."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(v, bool | float):  # YAML turned `yes` or `1e3` into something else
                raise ConfigError(f"{key.name}: quote the value for {k!r} (YAML read it as a {type(v).__name__})")
        return tuple(f"{k}:{v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(v if isinstance(v, Mapping) else str(v) for v in value)
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    raise ConfigError(f"{key.name} must be a list")


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping) and name not in KEYS:  # a map-valued key (sasl.users) stays whole
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


class BrokerConfig:
    """Typed, validated broker properties. `cfg["log.segment.bytes"]` reads a value."""

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {k.name: k.default for k in _KEYS}
        self._explicit: set[str] = set()  # set by the config file, --set or set(): STATIC_BROKER_CONFIG
        for name, value in _flatten(overrides or {}).items():
            self.set(name, value)

    def set(self, name: str, value: Any) -> None:
        key = KEYS.get(name)
        if key is None:
            close = [k for k in KEYS if k.split(".")[-1] in name or name.split(".")[-1] in k]
            hint = f" (did you mean {', '.join(sorted(close)[:3])}?)" if close else ""
            raise ConfigError(f"unknown broker property {name!r}{hint}; see `kafka-txn broker config`")
        self._values[name] = _coerce(key, value)
        self._explicit.add(name)

    def is_set(self, name: str) -> bool:
        """Given explicitly (rather than Kafka's default)."""
        return name in self._explicit

    @staticmethod
    def parse(name: str, value: Any) -> Any:
        """`value` coerced to the type of property `name` (ConfigError if it does not fit)."""
        return _coerce(KEYS[name], value)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    @classmethod
    def from_sources(cls, file: Path | None = None, sets: list[str] | None = None,
                     base: Mapping[str, Any] | None = None) -> BrokerConfig:
        cfg = cls(base)
        if file is not None:
            try:
                data = yaml.safe_load(file.read_text()) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise ConfigError(f"cannot read broker config {file}: {exc}") from None
            if not isinstance(data, Mapping):
                raise ConfigError(f"broker config {file} must be a map of property: value")
            for name, value in _flatten(data).items():
                cfg.set(name, value)
        for item in sets or []:
            name, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"--set {item!r} must look like key=value, e.g. --set num.partitions=6")
            cfg.set(name.strip(), value)
        return cfg
