"""gpufleet: one scheduling engine for GPU fleets, driven by a simulator or by live clusters."""

__version__ = "0.1.0"
