"""Kubernetes at the edge: cluster objects (kubectl JSON) in, our fleet and jobs out.

Translation only: ``snapshot`` loads and sorts objects by kind, ``quantity`` parses resource
quantities, ``nodes`` turns Node objects into our nodes plus their GPU readiness layers,
``pods`` turns pods and PodGroups into gangs, ``filters`` says which nodes a pod may use and
why not, ``analyze`` asks the engine (``run_cycle``) and assembles the report data.
"""
