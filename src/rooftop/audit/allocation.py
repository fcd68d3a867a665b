"""Pitfall 5, file allocation: preallocated (fio's default), appended at EOF
(what a service does) or wrapped around after EOF (a misconfigured
benchmark) (“The Dark Side of Microbenchmarking”, case 5: O_SYNC|O_DIRECT writes differed markedly)."""

from rooftop.audit.base import INDISTINGUISHABLE, Pitfall, Setting

FILE = "1MiB"


def _one(c: dict) -> str:
    if not c["measurable"]:
        return c["verdict"]
    if c["verdict"] == INDISTINGUISHABLE:
        return f"{c['a']} and {c['b']} indistinguishable"
    return f"{c['a']} {c['ratio']:.2f}x {c['b']}"


def meaning(comps: list[dict]) -> str:
    if not any(c["measurable"] for c in comps):
        return comps[0]["verdict"]
    app = comps[0]
    text = "; ".join(_one(c) for c in comps)
    if app["measurable"] and app.get("winner") == "preallocate":
        return (
            f"{text}: a service appending to its log pays the allocation a preallocated benchmark "
            f"leaves out; benchmark with append, or preallocate in the service"
        )
    return f"{text}: allocation costs the service nothing measurable beyond what a preallocated benchmark shows"


PITFALL = Pitfall(
    name="allocation",
    title="file allocation: preallocate vs append vs wrap",
    target="storage",
    op="put",
    args=("--size", "4KiB", "--pattern", "seq", "--io-mode", "direct+sync", "--file-size", FILE),
    unit="ops/s",
    settings=tuple(Setting(a, client=("--allocation", a)) for a in ("preallocate", "append", "wrap")),
    comparisons=(("preallocate", "append"), ("preallocate", "wrap")),
    rationale=(
        f"durable (O_DIRECT|O_SYNC, as “The Dark Side of Microbenchmarking”) sequential 4 KiB writes to a {FILE} file that was "
        "fallocated up front (preallocate, fio's default), grows at EOF (append: allocation in every "
        "write, started again empty at the file size) or is overwritten after EOF (wrap: allocated "
        "once, then reused); “The Dark Side of Microbenchmarking” found each markedly different"
    ),
    meaning=meaning,
    needs_direct=("preallocate", "append", "wrap"),
)
