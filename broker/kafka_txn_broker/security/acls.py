"""ACL bindings: resource patterns, access control entries, binding filters, and the config text form.

The enums are the wire codec's (formats.messages), whose values are Kafka's wire codes, so CreateAcls /
DescribeAcls / DeleteAcls carry them unchanged. Matching follows Kafka's ResourcePatternFilter and
AccessControlEntryFilter: a filter field that is ANY (or None for strings) matches everything, and
the MATCH pattern type selects every binding that would apply to the named resource.

Config form (`authorizer.acls`), one binding per list item, either a line

    "User:alice ALLOW Read Topic orders"               # literal topic
    "User:alice ALLOW Describe TransactionalId app- PREFIXED"
    "User:* DENY All Topic secret host=10.0.0.5"

or a map with the same words: {principal, permission, operation, resource, name, pattern, host}.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kafka_txn_broker.formats.messages import ACLOperation as Op
from kafka_txn_broker.formats.messages import ACLPermissionType as Permission
from kafka_txn_broker.formats.messages import ACLResourcePatternType as PatternType
from kafka_txn_broker.formats.messages import ACLResourceType as ResourceType

__all__ = ["Op", "Permission", "PatternType", "ResourceType", "AclError", "ResourcePattern",
           "AccessControlEntry", "AclBinding", "AclBindingFilter", "parse_acl", "enum_by_name"]

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
ANY_HOST = "*"
RESOURCE_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID)
OPERATIONS = tuple(op for op in Op if op not in (Op.UNKNOWN, Op.ANY, Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS))

E = TypeVar("E", Op, Permission, PatternType, ResourceType)


class AclError(ValueError):
    """An ACL binding or filter is not valid; the message names the field."""


def enum_by_name(enum: type[E], text: str, what: str) -> E:
    """`ClusterAction`, `CLUSTER_ACTION` and `cluster-action` all name Op.CLUSTER_ACTION."""
    key = text.replace("_", "").replace("-", "").lower()
    for member in enum:
        if member.name.replace("_", "").lower() == key:
            return member
    raise AclError(f"unknown {what} {text!r}")


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __str__(self) -> str:
        kind = " (prefixed)" if self.pattern_type == PatternType.PREFIXED else ""
        return f"{self.resource_type.name}:{self.name}{kind}"


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: Op
    permission: Permission

    def applies(self, principal: str, host: str) -> bool:
        return self.principal in (principal, WILDCARD_PRINCIPAL) and self.host in (host, ANY_HOST)


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def validate(self) -> None:
        p, e = self.pattern, self.entry
        if p.resource_type not in RESOURCE_TYPES:
            raise AclError(f"resource type {p.resource_type.name} cannot carry ACLs here")
        if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise AclError(f"pattern type {p.pattern_type.name} is only valid in a filter")
        if not p.name:
            raise AclError("resource name must not be empty")
        if p.resource_type == ResourceType.CLUSTER and (p.name, p.pattern_type) != (CLUSTER_NAME, PatternType.LITERAL):
            raise AclError(f"the cluster resource is the literal name {CLUSTER_NAME!r}")
        kind, sep, name = e.principal.partition(":")
        if not (kind and sep and name):
            raise AclError(f"principal {e.principal!r} must look like User:<name>")
        if e.operation not in OPERATIONS:
            raise AclError(f"operation {e.operation.name} is only valid in a filter")
        if e.permission not in (Permission.ALLOW, Permission.DENY):
            raise AclError(f"permission {e.permission.name} must be ALLOW or DENY")
        if not e.host:
            raise AclError("host must be an address or *")

    def to_dict(self) -> dict[str, str]:
        p, e = self.pattern, self.entry
        return {"resource_type": p.resource_type.name, "name": p.name, "pattern_type": p.pattern_type.name,
                "principal": e.principal, "host": e.host, "operation": e.operation.name,
                "permission": e.permission.name}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AclBinding:
        pattern = ResourcePattern(ResourceType[d["resource_type"]], str(d["name"]), PatternType[d["pattern_type"]])
        entry = AccessControlEntry(str(d["principal"]), str(d["host"]), Op[d["operation"]],
                                   Permission[d["permission"]])
        return cls(pattern, entry)

    def __str__(self) -> str:
        e = self.entry
        host = "" if e.host == ANY_HOST else f" from {e.host}"
        return f"{e.principal} {e.permission.name} {e.operation.name} on {self.pattern}{host}"


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls / DeleteAcls select. Defaults select every binding."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Op = Op.ANY
    permission: Permission = Permission.ANY

    def validate(self) -> None:
        unknown = [f.name for f in (self.resource_type, self.pattern_type, self.operation, self.permission)
                   if f.name == "UNKNOWN"]
        if unknown:
            raise AclError(f"filter field(s) with value UNKNOWN: {', '.join(unknown)}")

    def matches(self, binding: AclBinding) -> bool:
        return self._pattern_matches(binding.pattern) and self._entry_matches(binding.entry)

    def _pattern_matches(self, p: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, p.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, p.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, p.pattern_type):
            return self.name == p.name
        # MATCH: every binding that applies to the named resource.
        if p.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(p.name)
        return p.name in (self.name, WILDCARD)

    def _entry_matches(self, e: AccessControlEntry) -> bool:
        return (self.principal in (None, e.principal) and self.host in (None, e.host)
                and self.operation in (Op.ANY, e.operation) and self.permission in (Permission.ANY, e.permission))


# ---- config text -------------------------------------------------------------------------------------
_USAGE = ("write ACLs as 'PRINCIPAL ALLOW|DENY OPERATION RESOURCE-TYPE NAME [LITERAL|PREFIXED] [host=HOST]', "
          "e.g. 'User:alice ALLOW Read Topic orders'")


def parse_acl(spec: str | Mapping[str, Any]) -> AclBinding:
    """One binding from its config form (a line or a map); AclError names what is wrong."""
    fields = _fields_of_line(spec) if isinstance(spec, str) else {str(k): str(v) for k, v in spec.items()}
    missing = {"principal", "permission", "operation", "resource", "name"} - set(fields)
    if missing:
        raise AclError(f"ACL {spec!r} lacks {', '.join(sorted(missing))}: {_USAGE}")
    try:
        pattern = ResourcePattern(enum_by_name(ResourceType, fields["resource"], "resource type"), fields["name"],
                                  enum_by_name(PatternType, fields.get("pattern", "LITERAL"), "pattern type"))
        entry = AccessControlEntry(fields["principal"], fields.get("host", ANY_HOST),
                                   enum_by_name(Op, fields["operation"], "operation"),
                                   enum_by_name(Permission, fields["permission"], "permission"))
        binding = AclBinding(pattern, entry)
        binding.validate()
    except AclError as exc:
        raise AclError(f"ACL {spec!r}: {exc}") from None
    return binding


def _fields_of_line(line: str) -> dict[str, str]:
    words = line.split()
    host = [w.split("=", 1)[1] for w in words if w.lower().startswith("host=")]
    words = [w for w in words if not w.lower().startswith("host=")]
    if len(words) not in (5, 6):
        raise AclError(f"ACL {line!r}: {_USAGE}")
    fields = dict(zip(("principal", "permission", "operation", "resource", "name", "pattern"), words, strict=False))
    if host:
        fields["host"] = host[-1]
    return fields
