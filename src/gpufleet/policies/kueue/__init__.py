"""Kueue's admission and preemption, as Kueue decides them (docs/kueue.md).

The ``kueue`` profile (policies/registry.py) is ``KueueAdmitter`` and ``KueueOrder`` (admit.py)
with ``KueuePreemptor`` (preemption.py) over the profile's placer. The rest are their parts:
flavors.py (flavour assignment and nomination), resources.py (cpu, memory, resource groups),
tree.py (the cohort tree's arithmetic), candidates.py and targets.py (classical preemption),
fair.py and share.py (fair sharing), afs.py (admission fair sharing), reserved.py (quota
reserved across cycles, sticky heads).
"""
