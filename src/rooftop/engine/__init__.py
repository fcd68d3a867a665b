"""Drive rooftop-engine processes from Python.

Locates the engine binary, starts servers and waits until each one is
really ready (address file published *and* a successful ping), runs client
loads, and stops everything it started -- also on errors and Ctrl-C.

The one implementation of server readiness (wait_published), of
stopping processes (reap, terminate) and of leases (Leases: every engine a
rooftop command starts stops by itself once that command is gone):
servers.Group, the campaign's Runner and benchmarks/ all use these.

The package: base (the binary, its environment and exit codes, EngineError,
private files), commands (one-shot commands: run_engine), leases (Leases),
reaping (signal_proc, reap, terminate: ending processes rooftop started),
servers (Server, Group: engine servers started, waited for until ready,
stopped; wait_published), agents (Agents, AgentProc: one node agent per
node that forks a campaign's engines, engine.launch = agents), guard
(kills a helper's session once rooftop is gone: python -m
rooftop.engine.guard), enginedoc (the one reader of engine documents) and
machine (the machine a run was measured on: each node's record).
"""
