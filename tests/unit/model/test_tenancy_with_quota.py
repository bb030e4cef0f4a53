"""``Tenancy.with_quota``: one tenant's quota for one flavor changed, everything else as it was."""

from __future__ import annotations

import pytest

from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue

BASE = Tenancy(tenants=(TenantQueue("a", "org", (("H100", FlavorQuota(32)), ("A100", FlavorQuota(8)))),
                        TenantQueue("b", "org", (("H100", FlavorQuota(16)),))),
               cohorts=(Cohort("org"),), grace_s=120.0, half_life_s=3600.0)


def test_a_changed_flavor_keeps_its_place_and_the_other_tenants_and_settings_stay() -> None:
    out = BASE.with_quota("a", "H100", FlavorQuota(64, 8))
    assert out.tenant("a").quotas == (("H100", FlavorQuota(64, 8)), ("A100", FlavorQuota(8)))
    assert out.tenant("b") == BASE.tenant("b")
    assert (out.grace_s, out.half_life_s, out.cohorts) == (120.0, 3600.0, BASE.cohorts)
    # the original is untouched, its lookup table included
    assert BASE.tenant("a").quota("H100") == FlavorQuota(32)


def test_a_new_flavor_is_tried_last() -> None:
    out = BASE.with_quota("b", "A100", FlavorQuota(4))
    assert [f for f, _ in out.tenant("b").quotas] == ["H100", "A100"]
    assert out.tenant("b").nominal_gpus == 16 + 4


def test_an_unknown_tenant_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        BASE.with_quota("zz", "H100", FlavorQuota(1))
