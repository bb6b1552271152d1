"""Governance: approvals against written policies (and, built on them, releases and retirement).

Decisions are made by commands that record who and why; the lifecycle state each leaves is the catalog's `state`
column (recorded -> scored -> reviewed -> approved | rejected -> released -> retired).
"""

from ros_robodata.governance.approval import ApprovalRun, Decision, approve, judge
from ros_robodata.governance.approval_policy import ApprovalPolicy, PolicyError, load_approval_policy

__all__ = ['ApprovalPolicy', 'ApprovalRun', 'Decision', 'PolicyError', 'approve', 'judge', 'load_approval_policy']
