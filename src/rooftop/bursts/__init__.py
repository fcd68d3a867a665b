"""`rooftop bursts`, Figure 6 of Carns et al. (CUG 2025) on this machine: the service's
cost in bursts per server progress mode. `run` (modes, bursts, the run and
its parser), `timeline` (a mode's intervals: server, power, client,
schedule), `procstat` (one process's CPU, switches, wake-ups from /proc),
`neighbour` (the pinned neighbour job), `summary` (the per-mode summary),
`report` (a bursts run's report), `figure` (its figure) and `keys` (its
config keys, section `bursts`). Docs:
docs/bursts.md.
"""
