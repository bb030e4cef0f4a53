"""Tests against real Slurm and Ray clusters (a package: its fixtures end with its last test)."""
