"""Isolation: jails (bubblewrap), network namespaces, cgroups and the processes a
sandbox started."""
