"""The data-service roofline (Carns et al., CUG 2025, section 4.2).

x = server processes / client processes. The rate one client process can
expect is bounded by what it can issue alone (the client ceiling) and by
its share of the servers (x times the server ceiling):

    r(x) = min(client, x * server)

The ridge x* = client / server is where the two meet: below it servers
bind (the service is under-provisioned), above it clients bind (servers
idle). Ceilings are ranges [min, max] measured over samples or node pairs,
so the roofline and the ridge are ranges too.

A third ceiling goes past the paper (its section 5.2): a client process
alone on its node can outrun what each client gets when the whole node is
busy (shared NIC, memory bandwidth). The *client node* ceiling, measured
with one node full of clients against ample servers, replaces the client
ceiling wherever it is lower; the model error is reported with and without.

The model says when it cannot tell (issue 10, item 7). Each ceiling carries
a 95 % interval of the mean of its samples (Student t; a published range is
its own interval), so the ridge has an interval, and the recommended ratio a
verdict (Roofline.verdict): one practical ratio; a range of them around a
best estimate; or, when the client and server intervals overlap and the
ridge's interval spans several practical ratios, "not distinguishable". A
client and server ceiling measured by the same samples (2 nodes: one
placement stands for every stage) are never distinguishable. Samples whose
placement puts more processes on nodes sharing cores than those cores hold
(the emulated cluster's Node.emulation["shared_with"]) are not used for
ceilings; a ceiling left with no other samples is drawn from them but the
verdict is "cannot tell".

The package: ceilings (Ceiling, intervals, practical ratios), roofline
(Roofline, its verdict), evaluation (a roofline against samples), exclude
(the samples the ceilings may not use), build (from_run, load_params); and
what derives from rooflines: outliers (node pairs far from the others),
suspects (the slow nodes and links named from the pairs and the topology), mix
(a workload mix's combined roofline), classes (the client ceiling per
topology class), drift (a run's ceilings against its validation: the
platform changed between them) and answer (one answer per metric,
computed once). What the report advises from a run's
results is rooftop.report.advice (it reads rooftop.results, above this). The
names most code uses are re-exported here (`from rooftop import model`).
"""

from __future__ import annotations

from rooftop.model.build import PARAM_RANGE, from_run, load_params
from rooftop.model.ceilings import (
    CONFIDENCE,
    PRACTICAL_TOLERANCE,
    SERVER_BOUND,
    Ceiling,
    ModelError,
    practical,
    ratio_text,
    t975,
    t_interval,
)
from rooftop.model.evaluation import Check, Evaluation, evaluate
from rooftop.model.exclude import core_sharing, exclusion, exclusions, ran_beside, row_key, usable
from rooftop.model.roofline import Roofline

__all__ = [
    "CONFIDENCE",
    "PARAM_RANGE",
    "PRACTICAL_TOLERANCE",
    "SERVER_BOUND",
    "Ceiling",
    "Check",
    "Evaluation",
    "ModelError",
    "Roofline",
    "row_key",
    "core_sharing",
    "evaluate",
    "exclusion",
    "exclusions",
    "from_run",
    "load_params",
    "practical",
    "ran_beside",
    "ratio_text",
    "t975",
    "t_interval",
    "usable",
]
