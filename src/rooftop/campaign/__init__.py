"""Campaigns: the roofline parameter suite (collect) and validation samples.

A campaign is planned as *placements*: server processes started once (a
server group), then every sample that uses them, measured in client rounds
(one set of client processes measuring consecutive windows). Servers are
ready when their address files exist -- no sleeps. Every sample is stored
the moment it is measured; every process started is stopped on any exit,
Ctrl-C included.

What each stage plans lives in its file under rooftop/stages/ (Carns et al. (CUG 2025),
sections 4.3 and 5); this package runs the plans and names no stage.

The pieces, a module each: plan (placements, shared stages measured once,
client rounds), groups (server groups: Servers, a group's
lifecycle), commands (engine command lines, the merged server arguments, their leases), processes (every
process started, signals), rounds (RoundMeasurer: one client round), rows
(Rows: stored rows from what clients measured, and their validity),
windows (aggregates over common time), limits (link rates a sample cannot
exceed), runner (Runner: the loop over placements, retries, storing),
tracking (its run's progress: expected run time, window logs followed, the progress log),
lifecycle (Hold: one command's hold on a run, the same for every command
that stores one: claim, time, events, status, a killed command's time),
recover (windows in engine documents but not in the database), machine
(the machine read once per node, stored with the run) and sampling
(collect --pairs sample as a campaign runs it: the topology found, the
batches drawn). Engine
documents are read through rooftop.engine.enginedoc.

A campaign's time, three modules by role: costs (the prices: measured
constants, launch modes), estimate (the one estimator: work counted and
priced) and forecast (`rooftop plan`: a campaign planned on N nodes before
any allocation, then estimated). Not time: separable (what a campaign can
tell, said before it measures: whether its client and server ceilings are
separate measurements) and simulate (what its --pairs sample search can
find: the campaign's own sampling and naming run on a described platform,
no engine; the power to name a slow node or link and the false names per
run, which `rooftop plan` quotes).

Shared stages that would run the identical placement are measured once
(measure_once): on 2 nodes of one core, server peak, client peak and client
node are all one server against one client. The first planned measurement
stands for the others; its keys name them all ("server_peak+client_peak+...").
"""

from __future__ import annotations

from rooftop.campaign.commands import MERGED_BY_MAX, Commands, merge_server_args
from rooftop.campaign.groups import (
    ServerGroup,
    Servers,
    name_server_reasons,
    server_groups,
    server_reasons,
    stop_stale_groups,
)
from rooftop.campaign.plan import (
    ClientRound,
    client_rounds,
    measure_once,
    plan,
    plan_collect,
    plan_validate,
    split_by_servers,
)
from rooftop.campaign.processes import Processes, RoundInterrupted, SampleFailed
from rooftop.campaign.rounds import EmulationWatch, RoundMeasurer
from rooftop.campaign.rows import Rows
from rooftop.campaign.runner import Runner
from rooftop.engine.base import LEASE_FILE
from rooftop.engine.enginedoc import windows_of
from rooftop.engine.leases import Leases

__all__ = [
    "LEASE_FILE",
    "MERGED_BY_MAX",
    "ClientRound",
    "Commands",
    "EmulationWatch",
    "Leases",
    "Processes",
    "RoundInterrupted",
    "RoundMeasurer",
    "Rows",
    "Runner",
    "SampleFailed",
    "ServerGroup",
    "Servers",
    "client_rounds",
    "measure_once",
    "merge_server_args",
    "name_server_reasons",
    "plan",
    "plan_collect",
    "plan_validate",
    "server_groups",
    "server_reasons",
    "split_by_servers",
    "stop_stale_groups",
    "windows_of",
]
