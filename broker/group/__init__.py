"""Group coordination. modern/: the membership machinery of the KIP-848 generation of groups (member
epochs, target assignment, server-side assignors, session timers); share groups (KIP-932) on top of it
in share_group and share_membership. The classic group coordinator lives in broker/groups.py and its
group_* modules until the restructure moves it here.
"""
