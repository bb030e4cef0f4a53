"""What happens to the fleet under the jobs: failures and repairs, spot reclaims, driver upgrades
(and which images each driver runs), and how elastic gangs shrink and grow through them. The
runner installs these processes and their handlers beside the kernel's own."""
