"""NIC selection, Figure 2 of Carns et al. (CUG 2025): `policy` (the config key nic.policy,
the engine arguments a campaign passes, and `rooftop nics`), `check` (the
NIC asked for is the NIC used), `compare` (NIC policies compared across
runs) and `figure` (their bar chart). Docs: docs/nic-policies.md.
"""
