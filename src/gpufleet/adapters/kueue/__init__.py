"""Kueue's objects in and out: ResourceFlavor, ClusterQueue, Cohort, LocalQueue and
WorkloadPriorityClass manifests (kueue.x-k8s.io v1beta1 and v1beta2) ↔ a gpufleet tenancy config.

read.py reads manifests (files, directories, ``kubectl get -o yaml`` lists); to_tenancy.py
translates them, reporting every field it does not carry over; export.py writes them back.
"""
