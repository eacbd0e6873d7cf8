"""The ACL authorizer: Kafka's AclAuthorizer / StandardAuthorizer rules over an in-memory index.

A request is allowed when the principal is a super user; or when no ACL at all applies to the
resource and `allow.everyone.if.no.acl.found` is set; or when an ALLOW entry for the principal (or
User:*) and host grants the operation and no DENY entry forbids it. DENY wins. DENY matches the
operation itself or ALL; ALLOW also counts the operations that imply it (Read, Write, Delete and Alter
imply Describe; AlterConfigs implies DescribeConfigs). ACLs apply through a literal name, the
literal wildcard `*`, or a prefix.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable

from kafka_txn_broker.security.acl_store import AclStore
from kafka_txn_broker.security.acls import (
    WILDCARD,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    Op,
    PatternType,
    Permission,
    ResourceType,
)

log = logging.getLogger(__name__)

_IMPLIED = {
    Op.DESCRIBE: frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}),
}


def granting_operations(op: Op) -> frozenset[Op]:
    """The ACL operations whose ALLOW grants `op` (ALL always does)."""
    return _IMPLIED.get(op, frozenset({op})) | {Op.ALL}


class AclAuthorizer:
    def __init__(self, super_users: Iterable[str] = (), allow_if_no_acl: bool = False,
                 static: Iterable[AclBinding] = (), store: AclStore | None = None) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self.store = store
        self._static = frozenset(static)
        self._dynamic: set[AclBinding] = set(store.load()) if store is not None else set()
        self._literal: dict[tuple[ResourceType, str], set[AccessControlEntry]] = defaultdict(set)
        self._prefixed: dict[ResourceType, dict[str, set[AccessControlEntry]]] = defaultdict(dict)
        self._reindex()

    # ---- checks --------------------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, op: Op, resource_type: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        entries = self._entries_for(resource_type, name)
        if not entries:
            return self.allow_if_no_acl
        applicable = [e for e in entries if e.applies(principal, host)]
        if any(e.permission == Permission.DENY and e.operation in (op, Op.ALL) for e in applicable):
            return False
        granting = granting_operations(op)
        return any(e.permission == Permission.ALLOW and e.operation in granting for e in applicable)

    def authorize_any(self, principal: str, host: str, op: Op, resource_type: ResourceType) -> bool:
        """Kafka's authorizeByResourceType: may the principal do `op` on SOME resource of this type?

        True when an ALLOW names a resource that no DENY of the principal covers (a DENY on the literal
        `*` covers all); with allow.everyone.if.no.acl.found, also when the type has no ACLs at all.
        """
        if principal in self.super_users:
            return True
        allow: dict[PatternType, set[str]] = defaultdict(set)
        deny: dict[PatternType, set[str]] = defaultdict(set)
        any_acl = False
        for binding in self._bindings_of_type(resource_type):
            any_acl = True
            e, p = binding.entry, binding.pattern
            if not e.applies(principal, host):
                continue
            if e.permission == Permission.DENY and e.operation in (op, Op.ALL):
                deny[p.pattern_type].add(p.name)
            elif e.permission == Permission.ALLOW and e.operation in granting_operations(op):
                allow[p.pattern_type].add(p.name)
        if not any_acl:
            return self.allow_if_no_acl
        return _some_allow_survives(allow, deny)

    # ---- administration --------------------------------------------------------------------------------
    def acls(self, flt: AclBindingFilter = AclBindingFilter()) -> list[AclBinding]:
        return sorted((b for b in self._static | self._dynamic if flt.matches(b)), key=str)

    def create(self, binding: AclBinding) -> None:
        binding.validate()
        if binding in self._dynamic or binding in self._static:
            return  # Kafka treats re-creating an existing ACL as success
        self._dynamic.add(binding)
        self._persist_and_reindex()
        log.info("ACL added: %s", binding)

    def delete(self, flt: AclBindingFilter) -> tuple[list[AclBinding], list[AclBinding]]:
        """Remove the stored ACLs the filter matches: (deleted, refused because they come from the config)."""
        flt.validate()
        deleted = [b for b in self._dynamic if flt.matches(b)]
        refused = [b for b in self._static if flt.matches(b)]
        if deleted:
            self._dynamic.difference_update(deleted)
            self._persist_and_reindex()
            for b in deleted:
                log.info("ACL removed: %s", b)
        return sorted(deleted, key=str), sorted(refused, key=str)

    # ---- index -----------------------------------------------------------------------------------------
    def _persist_and_reindex(self) -> None:
        if self.store is not None:
            self.store.save(self._dynamic)
        self._reindex()

    def _reindex(self) -> None:
        self._literal.clear()
        self._prefixed.clear()
        for b in self._static | self._dynamic:
            p = b.pattern
            if p.pattern_type == PatternType.PREFIXED:
                self._prefixed[p.resource_type].setdefault(p.name, set()).add(b.entry)
            else:
                self._literal[(p.resource_type, p.name)].add(b.entry)

    def _entries_for(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        out = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            out.extend(self._literal.get((resource_type, WILDCARD), ()))
        for prefix, entries in self._prefixed.get(resource_type, {}).items():
            if name.startswith(prefix):
                out.extend(entries)
        return out

    def _bindings_of_type(self, resource_type: ResourceType) -> Iterable[AclBinding]:
        return (b for b in self._static | self._dynamic if b.pattern.resource_type == resource_type)


def _some_allow_survives(allow: dict[PatternType, set[str]], deny: dict[PatternType, set[str]]) -> bool:
    deny_literal, deny_prefixes = deny[PatternType.LITERAL], deny[PatternType.PREFIXED]
    if WILDCARD in deny_literal:
        return False

    def denied(name: str, prefixed: bool) -> bool:
        if any(name.startswith(d) for d in deny_prefixes):
            return True
        return not prefixed and name in deny_literal

    return (any(not denied(p, True) for p in allow[PatternType.PREFIXED])
            or any(not denied(n, False) for n in allow[PatternType.LITERAL]))

