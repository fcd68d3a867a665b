"""The config keys of `rooftop check` and `rooftop history` (section
`check`): the rule's threshold, for every metric and per metric, the
history window K and the band's width k (rooftop.history.check says the
rule). Declared once with type, default, limits and help, and registered
in the key table (rooftop.config.catalog.register): `rooftop config keys`
lists them, `--set check.k=4` and a config file's [check] table set them,
and the commands' flags (--threshold, --last, --k) override both. Rule is
what the commands use; its record is what `check --json` prints."""

from __future__ import annotations

from dataclasses import dataclass, field

from rooftop import metrics
from rooftop.config.catalog import register, section_of
from rooftop.config.files import load_file, merge
from rooftop.history.check import DEFAULT_THRESHOLD, K_MAD, LAST, MIN_HISTORY
from rooftop.keys import ConfigError, Key

#: The common keys the two commands read (any other given is refused, not ignored).
READS = ("results",)
#: A threshold's bounds, %.
MIN_PCT, MAX_PCT = 0.1, 100.0

KEYS = [
    Key(
        "check.threshold",
        "float",
        DEFAULT_THRESHOLD * 100,
        "a ceiling must move by more than this % of its median to count as changed, for every metric "
        "(check.METRIC.threshold overrides it for one)",
        minimum=MIN_PCT,
        maximum=MAX_PCT,
    ),
    *(
        Key(
            f"check.{m}.threshold",
            "float",
            None,
            f"the threshold of the {m} ceilings, % (default: check.threshold)",
            nullable=True,
            minimum=MIN_PCT,
            maximum=MAX_PCT,
        )
        for m in metrics.METRICS
    ),
    Key(
        "check.last",
        "int",
        LAST,
        "K: the history rule looks at the last K comparable runs of the current regime "
        "(since the last step change, outliers left out)",
        minimum=MIN_HISTORY,
        maximum=10_000,
    ),
    Key(
        "check.k",
        "float",
        K_MAD,
        "k: the history band is the window's median +- k x 1.4826 x MAD (k robust standard deviations)",
        minimum=0.01,
        maximum=100,
    ),
]

register("check", KEYS)


@dataclass(frozen=True)
class Rule:
    """The rule's settings: thresholds as fractions of a ceiling's median."""

    threshold: float = DEFAULT_THRESHOLD
    #: Metrics whose threshold is not `threshold`.
    per_metric: dict[str, float] = field(default_factory=dict)
    last: int = LAST
    k: float = K_MAD

    def of(self, metric: str) -> float:
        return self.per_metric.get(metric, self.threshold)

    def record(self) -> dict:
        """The resolved `check` section, as the config keys name it (% for thresholds)."""
        out: dict = {"threshold": _pct(self.threshold), "last": self.last, "k": self.k}
        for m in metrics.METRICS:
            out[m] = {"threshold": _pct(self.of(m))}
        return out

    def text(self, metrics_checked: list[str]) -> str:
        each = ", ".join(f"{m} {_pct(self.of(m)):g} %" for m in metrics_checked)
        return f"threshold {each}; history window K = {self.last} runs, band k = {self.k:g} (check.* keys)"


def _pct(fraction: float) -> float:
    return round(fraction * 100, 9)


def rule(config_file: str | None, overrides: dict) -> tuple[Rule, dict]:
    """(the rule, the merged config) from defaults <- the file <- overrides
    (--set and the flags)."""
    other = sorted(k for k in overrides if k not in READS and section_of(k) != "check")
    if other:
        raise ConfigError(
            f"{other[0]}: not read by rooftop check or rooftop history (their keys: check.*, {', '.join(READS)})"
        )
    cfg = merge(load_file(config_file) if config_file else None, overrides, ("check",))
    c = cfg["check"]
    per = {m: c[m]["threshold"] / 100 for m in metrics.METRICS if c[m]["threshold"] is not None}
    return Rule(c["threshold"] / 100, per, c["last"], c["k"]), cfg


def threshold_overrides(items: list[str]) -> dict[str, float]:
    """--threshold PCT (every metric) or METRIC=PCT, repeatable: config overrides."""
    out = {}
    for item in items:
        metric, eq, pct = item.rpartition("=")
        if eq and metric not in metrics.METRICS:
            raise ConfigError(f"--threshold {item}: {metric!r} is not a metric ({', '.join(metrics.METRICS)})")
        try:
            v = float(pct)
        except ValueError:
            v = -1.0
        if not MIN_PCT <= v <= MAX_PCT:
            raise ConfigError(
                f"--threshold {item}: expected PCT or METRIC=PCT with PCT from {MIN_PCT:g} to {MAX_PCT:g} "
                f"(e.g. 15 or bw=15)"
            )
        out[f"check.{metric}.threshold" if eq else "check.threshold"] = v
    return out
