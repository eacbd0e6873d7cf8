"""One group id, one type: a shard's lookups by type and Kafka's GROUP_ID_NOT_FOUND texts for a group that is
missing ("Group g not found.") or of another type ("Group g is not a share group."), as Kafka's
GroupMetadataManager words them; and the groups as ListGroups shows them."""

from __future__ import annotations

import pytest

from kafka_txn_broker.formats.errors import GroupIdNotFoundError
from kafka_txn_broker.group.consumer_group import ConsumerGroup
from kafka_txn_broker.group.group_type import ListedGroup
from kafka_txn_broker.group.shard import GroupShard
from kafka_txn_broker.group.share_group import ShareGroup
from tests.broker.group.fakes import join_new_member, make_shard

LOOKUPS = {"classic": GroupShard.classic_group, "consumer": GroupShard.consumer_group, "share": GroupShard.share_group}


def _shard_with_one_group_of_each_type() -> GroupShard:
    shard = make_shard()
    join_new_member(shard, "classic-g")
    shard.consumer_groups["consumer-g"] = ConsumerGroup("consumer-g")
    shard.share_groups["share-g"] = ShareGroup("share-g", 1)
    return shard


@pytest.mark.parametrize("present", ["classic", "consumer", "share"])
@pytest.mark.parametrize("asked", ["classic", "consumer", "share"])
def test_a_group_is_found_only_as_its_own_type(present: str, asked: str) -> None:
    shard = _shard_with_one_group_of_each_type()
    group_id = f"{present}-g"
    assert shard.group_type(group_id) == present
    if present == asked:
        assert LOOKUPS[asked](shard, group_id).group_id == group_id
        return
    with pytest.raises(GroupIdNotFoundError) as err:
        LOOKUPS[asked](shard, group_id)
    assert err.value.errno == 69
    assert err.value.args[0] == f"Group {group_id} is not a {asked} group."


@pytest.mark.parametrize("asked", ["classic", "consumer", "share"])
def test_a_missing_group_is_not_found_whatever_the_type_asked(asked: str) -> None:
    shard = _shard_with_one_group_of_each_type()
    assert shard.group_type("nobody") is None
    with pytest.raises(GroupIdNotFoundError) as err:
        LOOKUPS[asked](shard, "nobody")
    assert err.value.args[0] == "Group nobody not found."


def test_list_groups_sees_every_type_with_its_protocol_type_and_state() -> None:
    shard = _shard_with_one_group_of_each_type()
    listed = sorted(shard.listed_groups(), key=lambda g: g.group_id)
    # The classic group's only member joined and has not synced yet: CompletingRebalance (Kafka's state between
    # the JoinGroup answers and the leader's SyncGroup). The new-protocol groups without members are Empty.
    assert listed == [ListedGroup("classic-g", "classic", "consumer", "CompletingRebalance"),
                      ListedGroup("consumer-g", "consumer", "consumer", "Empty"),
                      ListedGroup("share-g", "share", "share", "Empty")]


def test_a_classic_join_on_another_types_id_is_refused_with_the_same_text() -> None:
    shard = _shard_with_one_group_of_each_type()
    with pytest.raises(GroupIdNotFoundError) as err:
        shard.get_or_create("share-g")
    assert err.value.args[0] == "Group share-g is not a classic group."
