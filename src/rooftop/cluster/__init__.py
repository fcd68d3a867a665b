"""The emulated cluster: N nodes on one machine ('rooftop cluster up').

Each node is a network namespace joined by a veth pair to a bridge in the
root namespace, with its own address, its link shaped in both directions
(tc), and a cgroup that caps its CPU share and pins its cores. Root only.

The package: spec (what 'cluster up' is asked for, parsed and checked before
anything is built), lifecycle (up, status, down), net (the namespaces, veth
links and tc shaping), cgroups (each node's cores and CPU cap), hosts (node
names in /etc/hosts), slurm (Slurm on the emulated nodes), mpi (Open MPI's
rsh agent across them), reshape ('cluster reshape': link rates and CPU caps
changed in place), state (the state file of what was built) and commands
(system commands, each with a timeout).
"""
