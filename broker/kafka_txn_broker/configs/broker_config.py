"""Broker properties (Kafka's KafkaConfig): every property this broker knows, declared once under Kafka's
name with Kafka's type, default, validator and documentation, and which of them may change at run time.

Values come from a YAML file (flat `key: value` or nested maps joined with dots) and `--set key=value`
overrides, and are parsed as Kafka parses them (configs/config_def.py: `true`/`false` for booleans, Java
integer ranges, comma-separated lists). Unknown keys are rejected with the closest known ones, so a typo
never silently does nothing. Errors (ConfigError) name the property and the fix in a command line's words.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka_txn_broker.configs.config_def import ConfigDefinition, ConfigType, ConfigValueError, at_least
from kafka_txn_broker.formats.releases import kafka_releases
from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS

_D = ConfigDefinition
_T = ConfigType

# Kafka's types where a plain integer is not INT: LONG (times in ms, byte rates), SHORT (replication factors).
# `dynamic=True`: alterable for one broker or the cluster default at run time (configs/dynamic_broker_config.py).

_DEFINITIONS: list[ConfigDefinition] = [
    _D("num.partitions", _T.INT, 1, "partitions of auto-created topics"),
    _D("default.replication.factor", _T.INT, 1, "replication factor of auto-created topics (capped at node count)"),
    _D("auto.create.topics.enable", _T.BOOLEAN, True, "create a topic on first Metadata/Produce for it"),
    _D("log.segment.bytes", _T.INT, 1024 * 1024 * 1024, "roll a segment at this size", dynamic=True),
    _D("log.roll.ms", _T.LONG, 7 * 24 * 3600 * 1000, "roll a segment when its first batch is this old", dynamic=True),
    _D("log.index.interval.bytes", _T.INT, 4096, "bytes between offset index entries", dynamic=True),
    _D("log.flush.interval.messages", _T.LONG, 2**63 - 1, "fsync after this many messages", dynamic=True),
    _D("log.flush.interval.ms", _T.LONG, 2**63 - 1, "fsync when unflushed data is this old", dynamic=True),
    _D("log.retention.check.interval.ms", _T.LONG, 300000,
       "how often segments wholly below a log's start offset (DeleteRecords) are deleted"),
    _D("unclean.leader.election.enable", _T.BOOLEAN, False,
       "let an out-of-sync replica lead a partition whose in-sync replicas are all down (data loss)",
       dynamic=True),
    _D("auto.leader.rebalance.enable", _T.BOOLEAN, True,
       "move leadership back to the preferred replica when its node comes back"),
    # kafka-reassign-partitions.sh --throttle sets these and --verify deletes them: kept and described; the
    # in-process replication is not throttled.
    _D("leader.replication.throttled.rate", _T.LONG, 2**63 - 1,
       "replication throttle of leaders, bytes/s (stored only: replication here is not throttled)",
       dynamic=True),
    _D("follower.replication.throttled.rate", _T.LONG, 2**63 - 1,
       "replication throttle of followers, bytes/s (stored only: replication here is not throttled)",
       dynamic=True),
    _D("replica.alter.log.dirs.io.max.bytes.per.second", _T.LONG, 2**63 - 1,
       "log dir move throttle, bytes/s (stored only: one log dir per node)", dynamic=True),
    # ---- log compaction (kafka_txn_broker/log/cleaner.py, cleaner_manager.py); topics override with the names
    # in parentheses: min.cleanable.dirty.ratio, delete.retention.ms, min.compaction.lag.ms ----
    _D("log.cleaner.enable", _T.BOOLEAN, True, "compact the logs of topics with cleanup.policy=compact"),
    _D("log.cleaner.backoff.ms", _T.LONG, 15000, "how often the cleaner looks for a log to compact", dynamic=True),
    _D("log.cleaner.min.cleanable.ratio", _T.DOUBLE, 0.5,
       "compact a log once this share of its cleanable bytes is dirty (min.cleanable.dirty.ratio)",
       dynamic=True),
    _D("log.cleaner.delete.retention.ms", _T.LONG, 86400000,
       "keep tombstones this long after their segment was first cleaned (delete.retention.ms)", dynamic=True),
    _D("log.cleaner.min.compaction.lag.ms", _T.LONG, 0,
       "never compact records younger than this (min.compaction.lag.ms)", dynamic=True),
    _D("message.max.bytes", _T.INT, 1048588, "largest record batch accepted", dynamic=True),
    _D("socket.request.max.bytes", _T.INT, 104857600, "largest request frame accepted"),
    _D("producer.id.expiration.ms", _T.INT, 86400000, "forget idle producers after this"),
    _D("producer.id.expiration.check.interval.ms", _T.INT, 600000, "how often idle producers are removed"),
    _D("min.insync.replicas", _T.INT, 1, "acks=all needs this many in-sync replicas", dynamic=True),
    _D("replica.lag.time.max.ms", _T.LONG, 30000, "drop a follower from the ISR after this lag"),
    _D("offsets.topic.num.partitions", _T.INT, 50, "partitions of __consumer_offsets"),
    _D("offsets.topic.replication.factor", _T.SHORT, 3, "replication factor of __consumer_offsets (capped)"),
    _D("offsets.topic.segment.bytes", _T.INT, 104857600, "segment size of __consumer_offsets"),
    _D("offsets.load.buffer.size", _T.INT, 5242880, "bytes of __consumer_offsets a coordinator load replays "
       "between two turns of the event loop", validator=at_least(1)),
    _D("group.initial.rebalance.delay.ms", _T.INT, 0, "wait before the first rebalance of a new group"),
    _D("group.min.session.timeout.ms", _T.INT, 6000, "smallest session timeout a member may ask for"),
    _D("group.max.session.timeout.ms", _T.INT, 1800000, "largest session timeout a member may ask for"),
    # ---- group coordinator (KIP-848 consumer, KIP-932 share, KIP-1071 streams groups): defaults of the
    # group configs (configs/group_config.py) and the bounds a group's own value must lie within ----
    _D("group.consumer.session.timeout.ms", _T.INT, 45000,
       "session timeout of consumer groups (a group sets consumer.session.timeout.ms)"),
    _D("group.consumer.min.session.timeout.ms", _T.INT, 45000,
       "smallest consumer.session.timeout.ms a group may set"),
    _D("group.consumer.max.session.timeout.ms", _T.INT, 60000,
       "largest consumer.session.timeout.ms a group may set"),
    _D("group.consumer.heartbeat.interval.ms", _T.INT, 5000,
       "heartbeat interval of consumer groups (a group sets consumer.heartbeat.interval.ms)"),
    _D("group.consumer.min.heartbeat.interval.ms", _T.INT, 5000,
       "smallest consumer.heartbeat.interval.ms a group may set"),
    _D("group.consumer.max.heartbeat.interval.ms", _T.INT, 15000,
       "largest consumer.heartbeat.interval.ms a group may set"),
    _D("group.consumer.assignment.interval.ms", _T.INT, 1000,
       "interval between assignment updates of consumer groups (a group sets consumer.assignment.interval.ms)"),
    _D("group.consumer.min.assignment.interval.ms", _T.INT, 0,
       "smallest consumer.assignment.interval.ms a group may set"),
    _D("group.consumer.max.assignment.interval.ms", _T.INT, 15000,
       "largest consumer.assignment.interval.ms a group may set"),
    _D("group.consumer.max.size", _T.INT, 2**31 - 1,
       "members a consumer group may have (GROUP_MAX_SIZE_REACHED beyond; a static member replacing its "
       "own instance id is not a new one)", validator=at_least(1)),
    _D("group.share.session.timeout.ms", _T.INT, 45000,
       "session timeout of share groups (a group sets share.session.timeout.ms)"),
    _D("group.share.min.session.timeout.ms", _T.INT, 45000, "smallest share.session.timeout.ms a group may set"),
    _D("group.share.max.session.timeout.ms", _T.INT, 60000, "largest share.session.timeout.ms a group may set"),
    _D("group.share.heartbeat.interval.ms", _T.INT, 5000,
       "heartbeat interval of share groups (a group sets share.heartbeat.interval.ms)"),
    _D("group.share.min.heartbeat.interval.ms", _T.INT, 5000,
       "smallest share.heartbeat.interval.ms a group may set"),
    _D("group.share.max.heartbeat.interval.ms", _T.INT, 15000,
       "largest share.heartbeat.interval.ms a group may set"),
    _D("group.share.assignment.interval.ms", _T.INT, 1000,
       "interval between assignment updates of share groups (a group sets share.assignment.interval.ms)"),
    _D("group.share.min.assignment.interval.ms", _T.INT, 0,
       "smallest share.assignment.interval.ms a group may set"),
    _D("group.share.max.assignment.interval.ms", _T.INT, 15000,
       "largest share.assignment.interval.ms a group may set"),
    _D("group.streams.session.timeout.ms", _T.INT, 45000,
       "session timeout of streams groups (a group sets streams.session.timeout.ms)"),
    _D("group.streams.min.session.timeout.ms", _T.INT, 45000,
       "smallest streams.session.timeout.ms a group may set"),
    _D("group.streams.max.session.timeout.ms", _T.INT, 60000, "largest streams.session.timeout.ms a group may set"),
    _D("group.streams.heartbeat.interval.ms", _T.INT, 5000,
       "heartbeat interval of streams groups (a group sets streams.heartbeat.interval.ms)"),
    _D("group.streams.min.heartbeat.interval.ms", _T.INT, 5000,
       "smallest streams.heartbeat.interval.ms a group may set"),
    _D("group.streams.max.heartbeat.interval.ms", _T.INT, 15000,
       "largest streams.heartbeat.interval.ms a group may set"),
    _D("group.streams.assignment.interval.ms", _T.INT, 1000,
       "interval between assignment updates of streams groups (a group sets streams.assignment.interval.ms)"),
    _D("group.streams.min.assignment.interval.ms", _T.INT, 0,
       "smallest streams.assignment.interval.ms a group may set"),
    _D("group.streams.max.assignment.interval.ms", _T.INT, 15000,
       "largest streams.assignment.interval.ms a group may set"),
    _D("group.share.record.lock.duration.ms", _T.INT, 30000,
       "how long a member holds acquired records (a group sets share.record.lock.duration.ms)"),
    _D("group.share.min.record.lock.duration.ms", _T.INT, 15000,
       "smallest share.record.lock.duration.ms a group may set"),
    _D("group.share.max.record.lock.duration.ms", _T.INT, 60000,
       "largest share.record.lock.duration.ms a group may set"),
    _D("group.share.delivery.count.limit", _T.INT, 5,
       "deliveries of a record before it is archived (a group sets share.delivery.count.limit)"),
    _D("group.share.min.delivery.count.limit", _T.INT, 2, "smallest share.delivery.count.limit a group may set"),
    _D("group.share.max.delivery.count.limit", _T.INT, 10, "largest share.delivery.count.limit a group may set"),
    _D("group.share.partition.max.record.locks", _T.INT, 2000,
       "records in flight per share partition (a group sets share.partition.max.record.locks)"),
    _D("group.share.min.partition.max.record.locks", _T.INT, 100,
       "smallest share.partition.max.record.locks a group may set"),
    _D("group.share.max.partition.max.record.locks", _T.INT, 4000,
       "largest share.partition.max.record.locks a group may set"),
    _D("group.share.max.size", _T.INT, 200, "members a share group may have (GROUP_MAX_SIZE_REACHED beyond)"),
    _D("group.share.max.share.sessions", _T.INT, 2000,
       "share sessions one broker keeps (SHARE_SESSION_LIMIT_REACHED beyond)"),
    # ---- share coordinator: __share_group_state (kafka_txn_broker/share/) ----
    _D("share.coordinator.state.topic.num.partitions", _T.INT, 50, "partitions of __share_group_state"),
    _D("share.coordinator.state.topic.replication.factor", _T.INT, 3,
       "replication factor of __share_group_state (capped)"),
    _D("share.coordinator.state.topic.segment.bytes", _T.INT, 104857600, "segment size of __share_group_state"),
    _D("share.coordinator.load.buffer.size", _T.INT, 5242880, "bytes of __share_group_state a coordinator "
       "load replays between two turns of the event loop", validator=at_least(1)),
    _D("share.coordinator.snapshot.update.records.per.snapshot", _T.INT, 500,
       "ShareUpdate records of a share-partition between two ShareSnapshot records"),
    _D("share.coordinator.state.topic.prune.interval.ms", _T.INT, 300000,
       "how often the share coordinator deletes the __share_group_state records replay no longer needs",
       validator=at_least(1)),
    _D("share.coordinator.cold.partition.snapshot.interval.ms", _T.INT, 300000,
       "how often the share coordinator writes a new ShareSnapshot of each share-partition whose latest "
       "snapshot is this old (so an idle one does not hold back pruning)", validator=at_least(1)),
    _D("group.streams.num.standby.replicas", _T.INT, 0, "standby replicas per task of streams groups"),
    _D("group.streams.max.standby.replicas", _T.INT, 2, "largest streams.num.standby.replicas a group may set"),
    _D("group.streams.initial.rebalance.delay.ms", _T.INT, 3000, "wait before a new streams group's first "
       "assignment (streams.initial.rebalance.delay.ms per group)"),
    _D("transaction.state.log.num.partitions", _T.INT, 50, "partitions of __transaction_state"),
    _D("transaction.state.log.replication.factor", _T.SHORT, 3, "replication factor of __transaction_state"),
    _D("transaction.state.log.segment.bytes", _T.INT, 104857600, "segment size of __transaction_state"),
    _D("transaction.state.log.load.buffer.size", _T.INT, 5242880, "bytes of __transaction_state a "
       "coordinator load replays between two turns of the event loop", validator=at_least(1)),
    _D("transaction.max.timeout.ms", _T.INT, DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
       "largest transaction.timeout.ms a producer may ask for"),
    _D("transaction.abort.timed.out.transaction.cleanup.interval.ms", _T.INT, 10000, "timeout reaper period"),
    _D("transactional.id.expiration.ms", _T.INT, 604800000, "expire idle transactional ids after this"),
    _D("transaction.remove.expired.transaction.cleanup.interval.ms", _T.INT, 3600000, "expiry check period"),
    _D("transaction.partition.verification.enable", _T.BOOLEAN, True, "leader verifies with the coordinator",
       dynamic=True),
    _D("transaction.version", _T.INT, 2, "highest transaction version (1 = TV1, 2 = TV2) advertised"),
    _D("share.transactional.acknowledgement.enable", _T.BOOLEAN, False,
       "KIP-1289 TxnShareAcknowledge: stands in for the share.version >= 2 feature level; advertised and "
       "served only with transaction.version >= 2 as well"),
    _D("transaction.two.phase.commit.enable", _T.BOOLEAN, False,
       "accept two-phase-commit transactions (KIP-939, InitProducerId v6 Enable2Pc): no timeout, an external "
       "transaction manager ends them; when false, Enable2Pc gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    # ---- TEST ONLY: emulate an upstream bug, to rehearse its incident (kafka_txn_broker/txn/faults.py); dynamic,
    # so a rehearsal switches the bug on and off while clients run ----
    _D("fault.injection", _T.STRING, "", "TEST ONLY, never in production: behave as Apache Kafka did before the "
       "named fix. KAFKA-19999: a marker's response is lost once and every same-epoch retry is rejected "
       "(TV2), leaving the transaction in PREPARE_*; KAFKA-20090: no producer id rotation when a fence "
       "aborts at epoch exhaustion, and a fence at Short.MAX_VALUE fails, leaving it Ongoing",
       choices=("", "KAFKA-19999", "KAFKA-20090"), dynamic=True),
    _D("fault.injection.transactional.id.prefix", _T.STRING, "",
       "TEST ONLY: fault.injection applies to transactional ids starting with this (empty: all)", dynamic=True),
    _D("kafka.version.emulate", _T.STRING, "", "advertise and accept only the API versions of this Apache Kafka "
       "release (e.g. 2.8, 3.0, 3.8, 4.0, 4.1), as it would; empty: everything this broker implements. Also "
       "some of its behaviours, e.g. write verification (from 3.6), a completing transaction drops a partition "
       "without a leader instead of retrying its marker (from 4.3)",
       choices=("", *kafka_releases())),
    _D("producer.id.block.size", _T.INT, 1000, "producer ids reserved per allocation"),
    _D("cluster.id", _T.STRING, "kafka-txn-embedded", "cluster id reported in Metadata"),
    _D("host", _T.STRING, "127.0.0.1", "address the listeners bind and advertise"),
    # ---- security (kafka_txn_broker/security/: auth.py, tls.py, sasl.py, authorizer.py) ----
    _D("security.protocol", _T.STRING, "PLAINTEXT", "protocol of every node's listener",
       choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    _D("ssl.keystore.type", _T.STRING, "PEM", "only PEM (convert JKS/PKCS12 with openssl)"),
    _D("ssl.keystore.location", _T.STRING, "", "PEM file with the broker's private key and certificate chain"),
    _D("ssl.keystore.certificate.chain", _T.PASSWORD, "", "certificate chain: PEM text or a PEM file's path"),
    _D("ssl.keystore.key", _T.PASSWORD, "", "private key: PEM text or a PEM file's path"),
    _D("ssl.key.password", _T.PASSWORD, "", "password of an encrypted private key"),
    _D("ssl.truststore.type", _T.STRING, "PEM", "only PEM"),
    _D("ssl.truststore.location", _T.STRING, "", "PEM file of the CAs that sign client certificates"),
    _D("ssl.truststore.certificates", _T.PASSWORD, "", "CA certificates: PEM text or a PEM file's path"),
    _D("ssl.client.auth", _T.STRING, "none", "client certificates: none, requested or required",
       choices=("none", "requested", "required")),
    _D("sasl.enabled.mechanisms", _T.STRING, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
       "SASL mechanisms offered (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI, OAUTHBEARER)"),
    _D("sasl.users", _T.LIST, (), "SASL users of PLAIN and SCRAM: a list (or comma-separated) of name:password, "
       "or a map name: password; secrets, keep them in a --config file readable only by you", sensitive=True),
    # ---- SASL/GSSAPI (security/gssapi.py) and SASL/OAUTHBEARER (security/oauthbearer.py), Kafka's names ----
    _D("sasl.kerberos.service.name", _T.STRING, "", "GSSAPI: the first component of the broker's principal"),
    _D("sasl.kerberos.principal.to.local.rules", _T.LIST, ("DEFAULT",),
       "GSSAPI: Kerberos principal -> Kafka principal; DEFAULT (the short name, broker's realm only)"),
    *(_D(f"listener.name.{listener}.{mechanism}.sasl.jaas.config", _T.PASSWORD, "",
         f"{mechanism.upper()} on a {listener.upper()} listener: the JAAS line ("
         + ("Krb5LoginModule with keyTab and principal" if mechanism == "gssapi" else "OAuthBearerLoginModule")
         + ")")
      for listener in ("sasl_plaintext", "sasl_ssl") for mechanism in ("gssapi", "oauthbearer")),
    *(_D(f"listener.name.{listener}.oauthbearer.sasl.server.callback.handler.class", _T.CLASS, "",
         "OAUTHBEARER: OAuthBearerValidatorCallbackHandler (tokens checked against the JWKS)")
      for listener in ("sasl_plaintext", "sasl_ssl")),
    _D("sasl.oauthbearer.jwks.endpoint.url", _T.STRING, "",
       "OAUTHBEARER: the identity provider's JWKS (https:, http: or file:), the keys tokens are signed with"),
    _D("sasl.oauthbearer.jwks.endpoint.refresh.ms", _T.LONG, 3600000,
       "OAUTHBEARER: how long fetched keys are used before fetching them again (an unknown key id "
       "fetches at once)", validator=at_least(0)),
    _D("sasl.oauthbearer.expected.issuer", _T.STRING, "", "OAUTHBEARER: the `iss` tokens must have (empty: any)"),
    _D("sasl.oauthbearer.expected.audience", _T.LIST, (),
       "OAUTHBEARER: `aud` must include one of these (empty: any)"),
    _D("sasl.oauthbearer.sub.claim.name", _T.STRING, "sub", "OAUTHBEARER: the claim that names the principal"),
    _D("sasl.oauthbearer.scope.claim.name", _T.STRING, "scope", "OAUTHBEARER: the claim that holds the scopes"),
    _D("sasl.oauthbearer.clock.skew.seconds", _T.INT, 30,
       "OAUTHBEARER: tolerance of exp, nbf and iat against the broker's clock", validator=at_least(0)),
    _D("sasl.scram.iterations", _T.INT, 4096, "PBKDF2 iterations of the SCRAM credentials (at least 4096)"),
    _D("sasl.server.max.receive.size", _T.INT, 524288, "largest request accepted before authentication"),
    _D("connections.max.reauth.ms", _T.LONG, 0,
       "KIP-368: the longest a SASL session lasts before the client must re-authenticate (0: no limit; an "
       "OAUTHBEARER session ends at its token's exp either way)", validator=at_least(0)),
    _D("authorizer.class.name", _T.STRING, "", "empty: no authorization; 'acl' or "
       "kafka.security.authorizer.AclAuthorizer: ACLs"),
    _D("allow.everyone.if.no.acl.found", _T.BOOLEAN, False, "allow access to resources no ACL applies to"),
    _D("super.users", _T.STRING, "", "principals allowed everything, ';'-separated: User:admin;User:ops"),
    _D("authorizer.acls", _T.LIST, (), "ACLs from the config, e.g. 'User:alice ALLOW Read Topic orders' "
       "(see kafka_txn_broker/security/acls.py); CreateAcls adds more, kept in <data-dir>/acls.json"),
]

# In declaration order (`kafka-txn broker config` lists them so).
DEFINITIONS: dict[str, ConfigDefinition] = {d.name: d for d in _DEFINITIONS}


class ConfigError(ValueError):
    """A configuration value or key is wrong; the message names it and the fix."""


def _parse(definition: ConfigDefinition, value: Any) -> Any:
    """`value` as the property's type (ConfigError if it does not fit). LIST values are kept as tuples."""
    if definition.type is ConfigType.LIST and isinstance(value, Mapping):
        value = _pairs(definition.name, value)
    try:
        parsed = definition.parse(value)
    except ConfigValueError as exc:
        raise ConfigError(exc.cli) from None
    return tuple(parsed) if definition.type is ConfigType.LIST else parsed


def _pairs(name: str, value: Mapping[str, Any]) -> list[str]:
    """A YAML map of name: value (sasl.users) as Kafka's list of name:value. The values may be secrets, so
    errors never show them."""
    for k, v in value.items():
        if isinstance(v, bool | float):  # YAML turned `yes` or `1e3` into something else
            raise ConfigError(f"{name}: quote the value for {k!r} (YAML read it as a {type(v).__name__})")
    return [f"{k}:{v}" for k, v in value.items()]


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping) and name not in DEFINITIONS:  # a map-valued key (sasl.users) stays whole
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


class BrokerConfig:
    """Typed, validated broker properties. `cfg["log.segment.bytes"]` reads a value. Not thread-safe: built
    before the cluster starts, then read (and, in tests, set) on the cluster's event loop."""

    # Moves with every change of any broker config (set(), a reload of the dynamic configs): a hot path may
    # keep values it read until it moves (each log keeps its flush and roll policy, read on every append).
    changes = 0

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {d.name: d.default for d in _DEFINITIONS}
        self._explicit: set[str] = set()  # set by the config file, --set or set(): STATIC_BROKER_CONFIG
        for name, value in _flatten(overrides or {}).items():
            self.set(name, value)

    def set(self, name: str, value: Any) -> None:
        definition = DEFINITIONS.get(name)
        if definition is None:
            close = [k for k in DEFINITIONS if k.split(".")[-1] in name or name.split(".")[-1] in k]
            hint = f" (did you mean {', '.join(sorted(close)[:3])}?)" if close else ""
            raise ConfigError(f"unknown broker property {name!r}{hint}; see `kafka-txn broker config`")
        self._values[name] = _parse(definition, value)
        self._explicit.add(name)
        BrokerConfig.changes += 1

    def is_set(self, name: str) -> bool:
        """Given explicitly (rather than Kafka's default)."""
        return name in self._explicit

    @staticmethod
    def parse(name: str, value: Any) -> Any:
        """`value` parsed as property `name` (ConfigError if it does not fit)."""
        return _parse(DEFINITIONS[name], value)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    @classmethod
    def from_sources(cls, file: Path | None = None, sets: list[str] | None = None,
                     base: Mapping[str, Any] | None = None) -> BrokerConfig:
        cfg = cls(base)
        if file is not None:
            import yaml  # only with a config file: 10 ms of every start otherwise

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
