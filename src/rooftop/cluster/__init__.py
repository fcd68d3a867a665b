"""The emulated cluster: N nodes on one machine ('rooftop cluster up').

Each node is a network namespace joined by a veth pair to a bridge in the
root namespace, with its own address, its link shaped in both directions
(tc), and a cgroup that caps its CPU share and pins its cores. Root only.
"""
