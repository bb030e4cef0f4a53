"""Identifier types: plain strings at run time, distinct names for the type checker."""

from typing import NewType

JobId = NewType("JobId", str)
NodeId = NewType("NodeId", str)
TenantId = NewType("TenantId", str)
