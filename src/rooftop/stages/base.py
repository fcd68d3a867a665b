"""What a stage is (Stage), and what it plans: placements (servers started
once) and the measurements made against them (each its K windows)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

#: A stage's part in the roofline model (rooftop.model):
ROLES = {
    "server": "its per-server-process rates are the server ceiling",
    "client": "its per-client-process rates are the client ceiling (and the pair matrix)",
    "node": "its per-client-process rates are the node-saturated client ceiling",
    "validation": "its samples are checked against the model",
    "other": "measured and shown, not used by the model",
}

#: Disjoint node pairs measured at once: (server node, client node) each.
PairRound = list[tuple[int, int]]


def measurement_key(stage, metric, server_nodes, spn, client_nodes, cpn) -> str:
    """A measurement's key, its rows' keys but their window: 'server_peak/rpc/s0x4/c1-2-3x4'."""
    s = "-".join(map(str, server_nodes))
    c = "-".join(map(str, client_nodes))
    return f"{stage}/{metric}/s{s}x{spn}/c{c}x{cpn}"


def sample_key(stage, metric, server_nodes, spn, client_nodes, cpn, i) -> str:
    """A stored sample's key: 'server_peak/rpc/s0x4/c1-2-3x4/0' (window i)."""
    return f"{measurement_key(stage, metric, server_nodes, spn, client_nodes, cpn)}/{i}"


@dataclass
class Measurement:
    """One planned measurement: client processes measuring its windows,
    consecutive engine windows after one warmup (one client round), each
    window a stored row (one per pair for pair rounds) keyed
    '<key>/<window>'."""

    #: Its rows' keys but their window: 'server_peak/rpc/s0x4/c1-2-3x4'.
    key: str
    stage: str
    metric: str
    client_nodes: list[int]
    clients_per_node: int
    #: The windows it measures (each row's `window`): range(K), K engine
    #: windows; a later part of one (campaign.plan.measure_once) starts later.
    windows: range
    duration: float
    warmup: float
    #: A pair round: (server node, client node) measured at once, one row each.
    pairs: PairRound | None = None
    #: Other stages this measurement stands for (the same placement).
    also: tuple[str, ...] = ()

    @property
    def client_procs(self) -> int:
        """Client processes of the measurement: one round of them measures it."""
        return len(self.client_nodes) * self.clients_per_node

    @property
    def label(self) -> str:
        """The stages it stands for, as its keys name them: 'server_peak+client_peak'."""
        return "+".join((self.stage, *self.also))

    @property
    def folder(self) -> str:
        """Its client round's folder under RESULTS/<run>/raw/: its key."""
        return self.key.replace("/", "_")

    def row_keys(self, window: int) -> list[str]:
        """The store keys of one of its windows: its own, or one per pair."""
        if self.pairs is None:
            return [f"{self.key}/{window}"]
        return [sample_key(self.label, self.metric, [a], 1, [b], 1, window) for a, b in self.pairs]

    def keys(self) -> list[str]:
        """The store keys of every window, window by window."""
        return [k for w in self.windows for k in self.row_keys(w)]


@dataclass
class Placement:
    """Server processes a campaign starts once (a server group), and every
    measurement made against them."""

    server_nodes: list[int]
    servers_per_node: int
    measurements: list[Measurement] = field(default_factory=list)
    #: The metrics of its own server group, when a placement's metrics need
    #: servers started differently (campaign.split_by_servers): "iops+sbw".
    tag: str = ""

    @property
    def label(self) -> str:
        base = f"s{'-'.join(map(str, self.server_nodes))}x{self.servers_per_node}"
        return f"{base}-{self.tag}" if self.tag else base

    @property
    def metrics(self) -> list[str]:
        """The metrics measured against its servers, in planned order."""
        return list(dict.fromkeys(m.metric for m in self.measurements))

    def keys(self) -> list[str]:
        """The store keys of every window of every measurement."""
        return [k for m in self.measurements for k in m.keys()]

    def measure(
        self,
        stage: str,
        cfg: dict,
        section: str,
        client_nodes: list[int],
        clients_per_node: int,
        pairs: PairRound | None = None,
        windows: int | None = None,
    ) -> Placement:
        """Adds one measurement per metric of cfg: windows (default
        cfg[section]["windows"]) engine windows (a sample each), of
        clients_per_node clients on client_nodes."""
        s = cfg[section]
        for m in cfg["metrics"]:
            key = measurement_key(stage, m, self.server_nodes, self.servers_per_node, client_nodes, clients_per_node)
            self.measurements.append(
                Measurement(
                    key,
                    stage,
                    m,
                    client_nodes,
                    clients_per_node,
                    range(windows or s["windows"]),
                    s["duration"],
                    s["warmup"],
                    pairs=pairs,
                )
            )
        return self


@dataclass(frozen=True)
class Stage:
    #: As stored (samples.stage, the first part of a sample key).
    name: str
    #: What it measures, one line (docs, 'rooftop config keys' of its switch).
    help: str
    #: Progress bars and the summary table: "server peak (per server process)".
    label: str
    #: Figure legends: "server peak".
    legend: str
    #: Its colour in figures (latency curves).
    colour: str
    #: Its part in the model: a key of ROLES.
    role: str
    #: The sample column its rate is: per_server, per_client or aggregate.
    rate: str
    #: The command that plans it: "collect" or "validate".
    phase: str
    #: Its placements under a resolved config.
    plan: Callable[[dict], list[Placement]]
    #: The bool config key that turns it on (None: always, when its phase runs).
    switch: str | None = None
    #: May be measured once with another shared stage of the identical
    #: placement (campaign.measure_once).
    shared: bool = False
    #: Its client documents' latency bins feed the latency figure.
    latency: bool = True
    #: A figure of its own (plots/<figure>.py), drawn from its rows.
    figure: str | None = None
    #: Its placement is meant to saturate its servers: legends add
    #: "(saturated)" when its client processes outnumbered its server
    #: processes, and say it was not (with the counts) when they did not
    #: (1 server against 1 client measures no saturation).
    saturates: bool = False

    def legend_for(self, placements) -> str:
        """Its legend for samples of these (server processes, client
        processes) placements."""
        if not self.saturates or not placements:
            return self.legend
        if all(c > s for s, c in placements):
            return f"{self.legend} (saturated)"
        s, c = min(placements, key=lambda p: p[1] - p[0])
        return f"{self.legend} (not saturated: {s} server{'s' if s != 1 else ''}, {c} client{'s' if c != 1 else ''})"

    def enabled(self, cfg: dict) -> bool:
        """Whether cfg asks for it (its switch)."""
        if self.switch is None:
            return True
        value = cfg
        for part in self.switch.split("."):
            value = value[part]
        return bool(value)
