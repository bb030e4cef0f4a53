"""Settings every test shares."""

from datetime import timedelta

from hypothesis import settings

#: Hypothesis's own default deadline (200 ms per example) fails healthy property tests whenever a
#: loaded machine stalls one example; 10 s still catches a hang. Tests with their own ``@settings``
#: keep theirs.
settings.register_profile("gpufleet", deadline=timedelta(seconds=10))
settings.load_profile("gpufleet")
