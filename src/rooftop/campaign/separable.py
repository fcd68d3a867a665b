"""What a campaign can tell (not its time: rooftop.campaign.estimate), said
before it measures: the nodes it splits the work over and, per metric,
whether the client and server ceilings are separable -- separate
measurements (then the ridge can be located) or one (2 nodes: the same
placement stands for both, and the verdict will be 'not distinguishable').
`rooftop collect` prints it first, on stderr."""

from __future__ import annotations

from rooftop import launchers, stages
from rooftop.model.roofline import ONE_MEASUREMENT_TODO
from rooftop.stages import Placement


def one_measurement(placements: list[Placement]) -> list[str]:
    """The metrics whose server and client ceilings the plan measures in one
    placement (rooftop.campaign.plan.measure_once merged their stages)."""
    server, client = stages.of_role("server").name, stages.of_role("client").name
    out = []
    for pl in placements:
        for m in pl.measurements:
            if {server, client} <= {m.stage, *m.also} and m.metric not in out:
                out.append(m.metric)
    return out


def split(cfg: dict) -> str:
    """'2 logical nodes of 1 core each (local launcher)', '4 nodes (srun)'."""
    nodes, kind = cfg.get("nodes") or [], cfg["launcher"]["type"]
    if launchers.spec(kind).logical_nodes:
        cores = sorted({len(n.get("cores") or []) for n in nodes})
        each = f" of {cores[0]} core{'s' if cores[0] != 1 else ''} each" if len(cores) == 1 and cores[0] else ""
        return f"{len(nodes)} logical node{'s' if len(nodes) != 1 else ''}{each} (this machine's cores split)"
    return f"{len(nodes)} node{'s' if len(nodes) != 1 else ''} ({kind} launcher)"


def line(cfg: dict, placements: list[Placement]) -> str:
    """The one line: the split, and whether the run can locate the ridge."""
    metrics = list(dict.fromkeys(m.metric for pl in placements for m in pl.measurements))
    once = one_measurement(placements)
    head = f"rooftop collect: {split(cfg)}, metrics {', '.join(metrics)}: "
    if not once:
        return head + "client and server ceilings are separate measurements, so the ridge can be located"
    which = "" if len(once) == len(metrics) else f" for {', '.join(once)}"
    return (
        head + f"cannot locate the ridge{which}: the client and server ceilings are one measurement here "
        f"(the verdict will be 'not distinguishable'); {ONE_MEASUREMENT_TODO} or on the emulated cluster "
        "(rooftop cluster up --nodes 3, then --launcher netns)"
    )
