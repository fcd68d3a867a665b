"""Pitfall 3, core binding: the launcher's binding policy decides where a
process runs; “The Dark Side of Microbenchmarking” (case 3) gained 22.5 % by turning the default
binding off."""

from rooftop.audit.base import INDISTINGUISHABLE, Pitfall, Setting


def meaning(comps: list[dict]) -> str:
    c = comps[0]
    if not c["measurable"]:
        return c["verdict"]
    if c["verdict"] == INDISTINGUISHABLE:
        return (
            "within the noise of these repeats core binding does not change the RPC rate here: either "
            "policy serves as well"
        )
    better = "core" if c["ratio"] >= 1 else "none"
    factor = c["ratio"] if c["ratio"] >= 1 else 1 / c["ratio"]
    return (
        f"binding '{better}' serves {factor:.2f}x the RPCs of the other: launch the service with the "
        f"binding its benchmark used, and report it"
    )


PITFALL = Pitfall(
    name="binding",
    title="core binding: core vs none",
    target="network",
    op="noop",
    args=(),
    unit="ops/s",
    settings=(Setting("core", binding="core"), Setting("none", binding="none")),
    comparisons=(("core", "none"),),
    rationale=(
        "server and client each pinned to a core of their own (core) or both free to run on any "
        "usable core (none: the scheduler places and moves them); “The Dark Side of Microbenchmarking” gained 22.5 % by turning "
        "the launcher's default binding off"
    ),
    meaning=meaning,
)
