"""What every KIP-848-generation group shares (Kafka's coordinator.group.modern): members with epochs,
a group epoch bumped by membership and subscription changes, a target assignment computed by a
server-side assignor at that epoch, and session timers. Share groups (KIP-932) reconcile a member to its
target at once; consumer groups (KIP-848) will add revocation before reassignment on the same pieces.

- assignor: the assignor interface and its inputs (topic metadata, member subscriptions)
- simple_assignor: the share groups' assignor ("simple")
- modern_group: ModernGroup and ModernGroupMember (epochs, subscriptions, target assignment)
- session_timers: member session deadlines on the injectable clock
"""
