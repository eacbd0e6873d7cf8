"""Request checks that kafka-python's decoder leaves out: a null where the schema allows none.

Kafka's generated readers reject a null string, bytes, array or array element in a field that is not
nullable in that version ("non-nullable field X was serialized as null"): the request cannot be
parsed and the broker closes the connection. kafka-python decodes such a null as None, so without
this check a single flipped length byte would reach every handler as a None it never expects
(found by tests/broker/apis/test_fuzz_wire.py). `decode_request` runs it right after decoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_NULLABLE_TYPES = frozenset({"string", "bytes", "records"})


@dataclass(frozen=True, slots=True)
class _Check:
    name: str
    nullable: bool  # None allowed for the field itself (nullableVersions, or a tagged field left out)
    check_elements: bool  # an array of strings/bytes: no element may be None
    is_array: bool
    child: tuple[_Check, ...] | None  # the struct's own checks (struct or struct array)


_PLANS: dict[tuple[int, int], tuple[_Check, ...]] = {}


def _plan(struct: Any, version: int) -> tuple[_Check, ...]:
    key = (id(struct), version)
    plan = _PLANS.get(key)
    if plan is None:
        checks = []
        for f in struct._fields:
            if not f.for_version_q(version):
                continue
            nullable = bool(f.nullable_for_version_q(version)) or bool(f.tagged_field_q(version))
            if f.is_struct_array():
                checks.append(_Check(f.name, nullable, False, True, _plan(f.array_of, version)))
            elif f.is_struct():
                checks.append(_Check(f.name, nullable or f.tag is not None, False, False, _plan(f, version)))
            elif f.is_array():
                elem = f._type_str[2:]
                checks.append(_Check(f.name, nullable, elem in _NULLABLE_TYPES, True, None))
            elif f._type_str in _NULLABLE_TYPES:
                checks.append(_Check(f.name, nullable, False, False, None))
        plan = _PLANS[key] = tuple(checks)
    return plan


def _walk(plan: tuple[_Check, ...], obj: Any, path: str) -> str | None:
    for check in plan:
        value = getattr(obj, check.name)
        if value is None:
            if check.nullable:
                continue
            return f"{path}{check.name}"
        if check.child is not None:
            items = value if check.is_array else (value,)
            if not check.child:  # a struct with nothing nullable-checked inside (ListOffsets' thousands of partitions)
                if any(item is None for item in items):
                    return f"{path}{check.name}[]"
                continue
            inner = f"{path}{check.name}."
            for item in items:
                if item is None:
                    return f"{path}{check.name}[]"
                bad = _walk(check.child, item, inner)
                if bad is not None:
                    return bad
        elif check.check_elements and None in value:
            return f"{path}{check.name}[]"
    return None


def null_violation(request: Any, version: int) -> str | None:
    """The path of the first field that is null although the schema forbids it, else None."""
    return _walk(_plan(request._struct, version), request, "")
