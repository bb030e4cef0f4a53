"""Settings every test shares."""

from hypothesis import settings

#: No per-example deadline: Hypothesis's default (200 ms) fails healthy property tests whenever a
#: loaded machine stalls one example. Its ``ci`` profile (loaded when CI is set) already has none;
#: this profile starts from whatever is loaded, so CI keeps that profile's derandomize. A hang is
#: caught by pytest-timeout (``make test``). Tests with their own ``@settings`` keep theirs.
settings.register_profile("gpufleet", deadline=None)
settings.load_profile("gpufleet")
