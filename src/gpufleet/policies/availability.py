"""Moved: capacity over time is an engine model now (engine/capacity.py). Kept so that imports of
the old names keep working; new code imports ``gpufleet.engine.capacity``."""

from gpufleet.engine.capacity import CapacityTimeline, Hold

#: The old name of ``CapacityTimeline``.
Availability = CapacityTimeline

__all__ = ["Availability", "CapacityTimeline", "Hold"]
