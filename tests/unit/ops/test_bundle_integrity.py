"""Placeholder replaced below."""
INCOMPLETE: dict[str, str] = {}
