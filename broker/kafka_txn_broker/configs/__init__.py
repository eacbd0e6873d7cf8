"""Kafka's configuration: what broker, topic and group configs exist, how they are parsed, checked,
stored, described and altered. One schema: every config is one ConfigDefinition, declared once.

- `config_def`: Kafka's ConfigDef (ConfigDefinition: type, default, validator, documentation; parsing) and
  the protocol's enums;
- `broker_config`: the broker properties (Kafka's KafkaConfig) and BrokerConfig, the static configuration
  read from a YAML file and `--set`;
- `log_config`: topic configs (LogConfig) and their broker synonyms;
- `group_config`: group configs (GroupConfig) and their broker-level bounds;
- `dynamic_broker_config`: which broker configs change at run time, and a node's view of them;
- `config_helper`: DescribeConfigs answers (values, sources, synonyms);
- `configuration_control`: IncrementalAlterConfigs / AlterConfigs: new config maps and their validation;
- `group_config_manager`: the effective config of one group, for the coordinators.

Dynamic configs live in the cluster's metadata event log (`ClusterMetadata.alter_configs`), topic configs
beside their topic, so they survive restarts. One asyncio loop owns all of it.
"""
