"""collect.pairs = sample: node pairs drawn by topology class (same switch,
same group, across groups: rooftop.topology), not every pair.

The first batch (first_draw) puts every node into at least k pairs
(collect.sample_min_pairs, default 3), so outlier detection still has a
median per node, spreading each node's pairs over the classes it can
reach, and gives each class at least MIN_PER_CLASS pairs. After each batch
the campaign (rooftop.campaign.sampling) hands back what was measured and
more() adds pairs where a class's client ceiling is not yet known well
enough: the interval of the mean of its pairs' rates (Student t, at
collect.sample_confidence, default 95 %) must be within
+-collect.sample_width of the mean (default 5 %), for every metric. A
class's next batch is what its spread says it needs (at most as many
pairs again), until every class is narrow enough, a class has no pair
left, or collect.sample_budget pairs are drawn. Nodes left with fewer than
k usable pairs (their samples failed or were left out) get more, up to 2k
pairs drawn.

The draws are reproducible (a seeded generator) and recorded in the run's
config ("pair_sample": the pairs in order and each batch's size), which is
what plan() measures: a resumed run measures the same pairs. Each batch is
scheduled into rounds of pairs measured at once (schedule): disjoint nodes,
no two pairs leaving their switch through the same switch or group link
(they would share it), and, where the launcher knows the cores (local,
netns), no two pairs sharing a core. The one exclusion rule
(rooftop.model.exclude) applies to sampled pairs as to any other: the
campaign draws no pair it already knows the rule would leave out.
"""

from __future__ import annotations

import bisect
import functools
import math
import random
import statistics
from collections import Counter
from collections.abc import Callable, Iterator

from rooftop.keys import Key
from rooftop.stages.base import PairRound, Placement
from rooftop.stages.pairs.base import (
    PairsExpected,
    PairStrategy,
    bulk,
    first_fit,
    known_cores,
    placements,
    shared_cores,
)
from rooftop.topology import CLASSES, of_config
from rooftop.topology.base import Topology
from rooftop.units import fmt_pct

#: Each class gets at least this many pairs (an interval needs a spread).
MIN_PER_CLASS = 3
#: A follow-up batch re-measures each suspect node with this many fresh
#: partners (one per class it reaches first: its switch, its group, across groups).
CONFIRM_NODE_PAIRS = 3
#: ... and each suspect link with this many: pairs of its nodes that do not
#: cross it, and pairs through it to far ends each behind another link.
CONFIRM_LINK_PAIRS = 4
#: Nodes after a node in Drawer.match's shuffled order it may be paired with.
LOOK_AHEAD = 4
#: Random partners looked at before the candidates are listed in full.
TRIES = 48

Pair = tuple[int, int]

KEYS = (
    Key(
        "collect.sample_width",
        "float",
        0.05,
        "--pairs sample: pairs are added to a topology class until the interval of its client "
        "ceiling is within +- this share of the mean (0.05: +-5 %)",
        minimum=0.001,
        maximum=1.0,
    ),
    Key(
        "collect.sample_confidence",
        "float",
        0.95,
        "--pairs sample: the confidence of that interval (Student t over the class's pairs)",
        minimum=0.5,
        maximum=0.999,
    ),
    Key(
        "collect.sample_min_pairs",
        "int",
        3,
        "--pairs sample: every node is in at least this many pairs (k), so outlier detection still names a slow node",
        minimum=1,
        maximum=10_000,
    ),
    Key(
        "collect.sample_budget",
        "int",
        None,
        "--pairs sample: draw at most this many pairs in all (default: no limit but every pair)",
        nullable=True,
        minimum=1,
        maximum=100_000_000,
    ),
)


# --- intervals -----------------------------------------------------------------
@functools.lru_cache(maxsize=4096)  # (each takes ms; a simulated campaign asks the same few again and again)
def t_quantile(p: float, df: int) -> float:
    """Student t's p quantile (0.5 < p < 1) with df degrees of freedom:
    the t whose CDF (0.5 + the density integrated from 0, Simpson's rule)
    is p, by bisection."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    pdf = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)

    def cdf(t: float) -> float:
        k = 400
        h = t / k
        s = pdf(0) + pdf(t) + sum((4 if i % 2 else 2) * pdf(i * h) for i in range(1, k))
        return 0.5 + s * h / 3

    lo, hi = 0.0, 1.0
    while cdf(hi) < p:
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def interval(values: list[float], confidence: float) -> tuple[float, float] | None:
    """(mean, half-width) of the confidence interval of the mean; None for
    fewer than 2 values."""
    if len(values) < 2:
        return None
    half = t_quantile(0.5 + confidence / 2, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return statistics.fmean(values), half


def narrow(values: list[float], width: float, confidence: float) -> bool:
    """At least MIN_PER_CLASS values, their interval within +-width of the mean."""
    iv = interval(values, confidence) if len(values) >= MIN_PER_CLASS else None
    return iv is not None and iv[1] <= width * abs(iv[0])


def wanted(values: list[float], width: float, confidence: float) -> int:
    """Pairs to add to a class with these pair rates: none when narrow;
    up to MIN_PER_CLASS; else what its spread says it needs for the width
    (at least 1, at most as many again)."""
    if len(values) < MIN_PER_CLASS:
        return MIN_PER_CLASS - len(values)
    if narrow(values, width, confidence):
        return 0
    mean, sd = statistics.fmean(values), statistics.stdev(values)
    t = t_quantile(0.5 + confidence / 2, len(values) - 1)
    need = math.ceil((t * sd / (width * abs(mean))) ** 2) if mean else len(values)
    return max(1, min(need - len(values), len(values)))


# --- drawing -------------------------------------------------------------------
class Without:
    """A sorted list but the items at some of its positions, as a sequence
    (len, [i], iteration) without copying it: random.choice draws from it
    exactly as from the list it stands for, in O(log n), so a node's
    partners on a switch of 100,000 nodes are not listed on every draw."""

    def __init__(self, items: list[int], skip: list[int]):
        self.items = items
        #: For each skipped position (sorted), the kept items before it.
        self.kept_before = [p - j for j, p in enumerate(skip)]
        self.size = len(items) - len(skip)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self.size:
            raise IndexError(i)
        return self.items[i + bisect.bisect_right(self.kept_before, i)]

    def __iter__(self) -> Iterator[int]:
        return (self[i] for i in range(self.size))


class Remaining:
    """The items of a sorted list not removed yet, by rank: remove(x),
    len and [i] in O(log n) (a Fenwick tree of who is left), so
    random.choice draws from it exactly as from a list of those left,
    without listing them again for every draw."""

    def __init__(self, items: list[int]):
        self.items, self.size = items, len(items)
        self.at = {x: i for i, x in enumerate(items)}
        self.left = [True] * self.size
        self.tree = [0] * (self.size + 1)
        for i in range(1, self.size + 1):
            self.tree[i] += 1
            j = i + (i & -i)
            if j <= self.size:
                self.tree[j] += self.tree[i]
        self.count = self.size

    def __len__(self) -> int:
        return self.count

    def remove(self, x: int) -> None:
        i = self.at.get(x)
        if i is None or not self.left[i]:
            return
        self.left[i] = False
        self.count -= 1
        tree, size = self.tree, self.size
        i += 1
        while i <= size:
            tree[i] -= 1
            i += i & -i

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self.count:
            raise IndexError(i)
        tree, size = self.tree, self.size
        pos, rank, step = 0, i + 1, 1 << size.bit_length()
        while step:
            nxt = pos + step
            if nxt <= size and tree[nxt] < rank:
                pos = nxt
                rank -= tree[nxt]
            step >>= 1
        return self.items[pos]


class Drawer:
    """Draws unordered node pairs (lower, higher) of a class, never one
    drawn before nor one usable() refuses; reproducible from its seed."""

    def __init__(self, topo, chosen=(), usable: Callable[[int, int], bool] | None = None, seed: str = ""):
        self.topo, self.n = topo, topo.n
        self.switches, self.groups = topo.members()
        self.chosen: set[Pair] = {tuple(sorted(p)) for p in chosen}
        self.usable = usable or (lambda a, b: True)
        self.given = usable
        self.rng = random.Random(f"rooftop pair sample {self.n} {seed}")
        self.pairs: list[Pair] = []
        self.per_class = dict.fromkeys(topo.sizes(), 0)
        self.per_node: dict[tuple[int, str], int] = {}
        for a, b in self.chosen:
            self._count(a, b)
        #: Each node's position on its switch; per (group, switch), the
        #: positions in the group of that switch's nodes; per class, the
        #: nodes that reach it (computed once, not per draw).
        self.on_switch = {x: i for nodes in self.switches.values() for i, x in enumerate(nodes)}
        self.in_group: dict[tuple[str, str], list[int]] = {}
        for g, nodes in self.groups.items():
            for i, x in enumerate(nodes):
                self.in_group.setdefault((g, topo.switch[x]), []).append(i)
        self.reaching: dict[str, list[int]] = {}
        self.reached: dict[tuple[str, str], list[str]] = {}
        self.views: dict[int, Without] = {}  # a node's partners on its switch

    def _count(self, a: int, b: int) -> None:
        c = self.topo.klass(a, b)
        self.per_class[c] = self.per_class.get(c, 0) + 1
        for x in (a, b):
            self.per_node[(x, c)] = self.per_node.get((x, c), 0) + 1

    def reaches(self, a: int, c: str) -> bool:
        """Node a has partners in class c at all."""
        sw, gr = len(self.switches[self.topo.switch[a]]), len(self.groups[self.topo.group[a]])
        if c == "switch":
            return sw > 1
        if c == "group":
            return gr > sw
        if c == "global":
            return gr < self.n
        return self.n > 1  # all

    def _ok(self, a: int, b: int) -> bool:
        p = (a, b) if a < b else (b, a)
        return a != b and p not in self.chosen and self.usable(*p)

    def _candidates(self, a: int, c: str):
        """a's partners in class c, in node order (a view, for a switch or a group)."""
        t = self.topo
        if c == "switch":
            view = self.views.get(a)
            if view is None:
                view = self.views[a] = Without(self.switches[t.switch[a]], [self.on_switch[a]])
            return view
        if c == "group":
            return Without(self.groups[t.group[a]], self.in_group[(t.group[a], t.switch[a])])
        if c == "all":
            return [x for x in range(self.n) if x != a]
        return [x for x in range(self.n) if t.group[x] != t.group[a]]

    def _tries(self, a: int, c: str, small) -> Iterator[int]:
        """Up to TRIES random partners of a in class c, drawn as one by one
        from `small` (a's candidates) when given, else from every node,
        keeping those in class c."""
        rng = self.rng
        if isinstance(small, Without):
            items, kept, size, below = small.items, small.kept_before, small.size, rng.randrange
            one = kept[0] if len(kept) == 1 else -1
            for _ in range(TRIES):  # rng.choice(small): the item at rng.randrange(len), found here
                i = below(size)
                yield items[i + (i >= one if one >= 0 else bisect.bisect_right(kept, i))]
        elif small:
            for _ in range(TRIES):
                yield rng.choice(small)
        else:
            topo, below, n = self.topo, rng.randrange, self.n
            sw, gr, swa, gra = topo.switch, topo.group, topo.switch[a], topo.group[a]
            across = c == "global" and topo.source != "none"  # klass(a, b) == "global", inline: the most tried
            for _ in range(TRIES):
                b = below(n)
                if (sw[b] != swa and gr[b] != gra) if across else topo.klass(a, b) == c:
                    yield b

    def partner(self, a: int, c: str, need: dict[int, int] | None = None, reached: bool = False) -> int | None:
        """A partner of a in class c (with need: the one with the most
        pairs still needed among a few random ones); None: none left.
        reached: a reaches class c (the caller knows)."""
        if not reached and not self.reaches(a, c):
            return None
        seen = []
        small = self._candidates(a, c) if c in ("switch", "group") or self.n <= 4 * TRIES else None
        chosen, usable, want = self.chosen, self.given, 1 if need is None else 8
        for b in self._tries(a, c, small):
            p = (a, b) if a < b else (b, a)
            if a != b and p not in chosen and (usable is None or usable(*p)):
                seen.append(b)
                if len(seen) >= want:
                    break
        if not seen:
            left = (b for b in (small or self._candidates(a, c)) if self._ok(a, b))
            if not need:  # the first one left
                return next(left, None)
            seen = list(left)
        if not seen:
            return None
        if not need:
            return seen[0]
        if len(need) == self.n:  # every node's need: its own get, no default
            return max(seen, key=need.__getitem__)
        get = need.get
        return max(seen, key=lambda b: get(b, 0))

    def take(self, a: int, b: int) -> Pair:
        p = (min(a, b), max(a, b))
        self.chosen.add(p)
        self.pairs.append(p)
        self._count(*p)
        return p

    def draw(self, c: str, need: dict[int, int] | None = None) -> Pair | None:
        """One more pair of class c (None: the class has none left)."""
        if c not in self.reaching:
            self.reaching[c] = [a for a in range(self.n) if self.reaches(a, c)]
        nodes = self.reaching[c]
        for _ in range(8):
            pick = self.rng.sample(nodes, min(len(nodes), 8))
            a = max(pick, key=lambda x: (need or {}).get(x, 0))
            b = self.partner(a, c, need)
            if b is not None:
                return self.take(a, b)
        for a in nodes:  # near the class's end: every node in turn
            b = self.partner(a, c, need)
            if b is not None:
                return self.take(a, b)
        return None

    def reachable(self, a: int) -> list[str]:
        """The classes node a reaches, in per_class's order."""
        where = (self.topo.switch[a], self.topo.group[a])
        if where not in self.reached:  # (the classes are per_class's from the start: none is added)
            self.reached[where] = [c for c in self.per_class if self.reaches(a, c)]
        return self.reached[where]

    def classes(self, a: int) -> list[str]:
        """The classes node a reaches, the one it has fewest pairs in first
        (ties: the class with fewest pairs)."""
        classes = self.reachable(a)
        if len(classes) > 1:
            per_node, per_class = self.per_node, self.per_class
            classes = sorted(classes, key=lambda c: (per_node.get((a, c), 0), per_class[c]))
        return classes

    def fewest(self, a: int) -> str | None:
        """classes(a)[0] (None: a reaches none), without sorting them all."""
        classes = self.reachable(a)
        if len(classes) < 2:
            return classes[0] if classes else None
        per_node, per_class = self.per_node, self.per_class
        return min(classes, key=lambda c: (per_node.get((a, c), 0), per_class[c]))

    def cover(self, a: int, need: dict[int, int]) -> Pair | None:
        """One more pair of node a, in the class a has fewest pairs in."""
        for c in self.classes(a):
            b = self.partner(a, c, need, reached=True)
            if b is not None:
                return self.take(a, b)
        return None

    def match(self, nodes: list[int]) -> list[Pair]:
        """One pair more for as many of these nodes as a random matching
        among them gives: each node goes with the others whose fewest-pairs
        class (classes()) is the same, on its switch or in its group where
        that class says so; they are shuffled and paired two by two, each
        node with the first of the next LOOK_AHEAD that makes a pair in
        that class, usable and not drawn before. The nodes left over
        are the caller's (cover() gives them a partner one by one). Linear in
        the nodes, where cover() draws candidates for each."""
        t = self.topo
        buckets: dict[tuple[str, str], list[int]] = {}
        for a in nodes:
            c = self.fewest(a)
            if c is None:
                continue
            where = t.switch[a] if c == "switch" else t.group[a] if c == "group" else ""
            buckets.setdefault((c, where), []).append(a)
        out: list[Pair] = []
        klass, chosen, usable = t.klass, self.chosen, self.given
        import numpy  # (heavy: only a draw loads it, not the front door)

        shuffle = numpy.random.default_rng(self.rng.getrandbits(64)).permutation
        start = 0
        for (c, _), members in buckets.items():
            order = [members[i] for i in shuffle(len(members)).tolist()]
            i, last = 0, len(order) - 1
            while i < last:
                a = order[i]
                for j in range(i + 1, min(i + 1 + LOOK_AHEAD, last + 1)):  # the next that fits, moved up
                    b = order[j]
                    p = (a, b) if a < b else (b, a)
                    if p not in chosen and klass(a, b) == c and (usable is None or usable(*p)):
                        out.append(p)
                        order[j] = order[i + 1]
                        i += 2
                        break
                else:
                    i += 1
            kept = out[start:]  # (this class's pairs: they share no node, so counted after)
            start = len(out)
            self.per_class[c] = self.per_class.get(c, 0) + len(kept)
            per_node = self.per_node
            for x in (x for p in kept for x in p):
                per_node[(x, c)] = per_node.get((x, c), 0) + 1
        chosen.update(out)
        self.pairs += out
        return out


def first_draw(topo, k: int, usable=None) -> list[Pair]:
    """The first batch: MIN_PER_CLASS pairs of each class, then every node
    into at least k pairs (fewer where it has fewer usable partners): the
    nodes needing the most pairs are matched at random two by two
    (Drawer.match), and each node the matching leaves over, drawn at random,
    gets its next one (Drawer.cover), until none needs more.

    Those nodes are kept by need (a set per count, and the top count's by
    rank, Remaining), not listed again for every pair: drawing grows with
    the pairs drawn, not with their square. The same draw without a usable()
    is remembered (the plan, its expected counts and the dry run each ask
    for it)."""
    if usable is None:
        return list(_first_draw_of(topo.source, tuple(topo.switch), tuple(topo.group), k))
    return _first_draw(topo, k, usable)


@functools.lru_cache(maxsize=2)
def _first_draw_of(source: str, switch: tuple[str, ...], group: tuple[str, ...], k: int) -> tuple[Pair, ...]:
    return tuple(_first_draw(Topology(source, list(switch), list(group)), k))


def _first_draw(topo, k: int, usable=None) -> list[Pair]:
    with bulk():
        return _cover_all(topo, k, usable)


class Needs:
    """How many pairs each node still needs, kept by need (a set per count;
    the top count's nodes by rank, Remaining), so the nodes needing the
    most are never listed again for every pair drawn."""

    def __init__(self, n: int, k: int):
        self.need = dict.fromkeys(range(n), min(k, n - 1))
        self.by_need: dict[int, set[int]] = {}
        for i, v in self.need.items():
            if v > 0:
                self.by_need.setdefault(v, set()).add(i)
        self.top: Remaining | None = None  # the nodes needing the most pairs (most: top_need)
        self.top_need = 0

    def lower(self, x: int, to: int) -> None:
        """Node x needs `to` pairs now."""
        v, self.need[x] = self.need[x], to
        if v > 0:
            self.by_need[v].discard(x)
            if self.top is not None and v == self.top_need:
                self.top.remove(x)
        if to > 0:
            self.by_need.setdefault(to, set()).add(x)

    def took(self, p: Pair) -> None:
        for x in p:
            self.lower(x, self.need[x] - 1)

    def next_level(self) -> list[int] | None:
        """The nodes needing the most pairs, as the level's top (None: no node
        needs any)."""
        counts = [v for v, nodes in self.by_need.items() if nodes]
        if not counts:
            return None
        self.top_need, self.top = max(counts), None
        return sorted(self.by_need[self.top_need])

    def matched(self, nodes: set[int]) -> None:
        """These nodes of the top level got a pair each, at once."""
        v = self.top_need
        self.by_need[v] -= nodes
        if v > 1:
            self.by_need.setdefault(v - 1, set()).update(nodes)
        self.need.update(dict.fromkeys(nodes, v - 1))

    def left(self) -> Remaining | None:
        """The top level's nodes still needing a pair, by rank (None: none)."""
        if self.top is None and self.by_need[self.top_need]:
            self.top = Remaining(sorted(self.by_need[self.top_need]))
        return self.top if self.top is not None and len(self.top) else None


def _cover_all(topo, k: int, usable=None) -> list[Pair]:
    """first_draw's pairs: each level of need matched at once (Drawer.match),
    the nodes it leaves given a partner one by one (Drawer.cover)."""
    d = Drawer(topo, (), usable, "first")
    needs = Needs(topo.n, k)
    sizes = topo.sizes()
    for c in list(d.per_class):
        for _ in range(min(MIN_PER_CLASS, sizes[c])):
            p = d.draw(c, needs.need)
            if p is None:
                break
            needs.took(p)
    while (level := needs.next_level()) is not None:
        needs.matched({x for p in d.match(level) for x in p})  # most of the level at once
        while (top := needs.left()) is not None:
            a = d.rng.choice(top)  # (len and [i]: as from the list of those nodes)
            p = d.cover(a, needs.need)
            if p is None:
                needs.lower(a, 0)  # no usable partner left: it keeps fewer pairs
            else:
                needs.took(p)
    return d.pairs


def more(
    topo,
    chosen: list[Pair],
    rates: dict[str, dict[Pair, float]],
    usable_pairs: dict[int, int],
    cfg: dict,
    usable=None,
    batch: int = 1,
) -> tuple[list[Pair], str]:
    """The next batch after a measured one, and why it is empty when it is.
    rates: metric -> usable pair -> its rate (the caller has applied the
    exclusion rule and left out pairs of nodes flagged slow); usable_pairs:
    node -> its usable pairs."""
    c = cfg["collect"]
    width, conf, k, budget = c["sample_width"], c["sample_confidence"], c["sample_min_pairs"], c["sample_budget"]
    left = (budget - len(chosen)) if budget else math.inf
    d = Drawer(topo, chosen, usable, f"batch {batch}")
    adds = _recover(topo, d, chosen, usable_pairs, k, left)
    want = {}
    for cls in d.per_class:
        per_metric = [[r for p, r in by_pair.items() if topo.klass(*p) == cls] for by_pair in rates.values()]
        want[cls] = max((wanted(v, width, conf) for v in per_metric), default=MIN_PER_CLASS)
    empty: list[str] = []
    while any(want.values()) and len(adds) < left:
        for cls in [x for x in want if want[x]]:
            got = d.draw(cls)
            if got is None:
                want[cls] = 0
                empty.append(cls)
            else:
                adds.append(got)
                want[cls] -= 1
            if len(adds) >= left:
                break
    if adds:
        return adds, ""

    if budget and len(chosen) >= budget and any(want.values()):
        return [], f"the pair budget ({budget}) is spent"
    if empty:
        return [], f"no pair left to draw ({', '.join(CLASSES[x] for x in empty)})"
    return [], f"every class's {fmt_pct(conf)} interval is within +-{fmt_pct(width)}"


def _recover(topo, d: Drawer, chosen: list[Pair], usable_pairs: dict[int, int], k: int, left: float) -> list[Pair]:
    """Coverage lost to failures: each node with fewer than k usable pairs
    gets new partners (fewest usable first; at most left pairs), unless it
    was already drawn 2k times (a node whose pairs keep failing is not
    chased further)."""
    adds: list[Pair] = []
    drawn = dict.fromkeys(range(topo.n), 0)
    for p in chosen:
        for x in p:
            drawn[x] += 1
    for a in sorted(range(topo.n), key=lambda i: usable_pairs.get(i, 0)):
        if drawn[a] >= 2 * k:
            continue
        for _ in range(min(k, topo.n - 1) - usable_pairs.get(a, 0)):
            if len(adds) >= left:
                break
            got = d.cover(a, {})
            if got:
                adds.append(got)
    return adds


# --- scheduling ------------------------------------------------------------------
def schedule(pairs: list[Pair], topo, cores: dict[int, set] | None = None) -> list[PairRound]:
    """Rounds of pairs measured at once, in order: disjoint nodes; a pair
    that leaves its switch uses both switches' links up (and across groups,
    both groups' links), which no other pair of its round uses; pairs
    sharing a core (cores: node -> its cores, where known) never together.
    Each pair goes to the first round it fits (first_fit)."""
    own = shared_cores(cores)
    none: set = set()

    def uses(a: int, b: int) -> list:
        cls = topo.klass(a, b)
        out: list = [a, b]
        if own:
            out += [("core", c) for c in own.get(a, none) | own.get(b, none)]
        if cls in ("group", "global"):
            out += [("switch", topo.switch[a]), ("switch", topo.switch[b])]
        if cls == "global":
            out += [("group", topo.group[a]), ("group", topo.group[b])]
        return out

    return first_fit(pairs, uses)


def follow_up(
    topo,
    chosen: list[Pair],
    nodes: list[int],
    links: list[tuple[str, list[int]]],
    usable: Callable[[int, int], bool] | None = None,
    batch: int = 1,
) -> list[Pair]:
    """The confirmation batch: fresh pairs (never drawn before, usable) that
    separate each suspect's hypotheses before it is named.

    nodes: suspect nodes; each gets CONFIRM_NODE_PAIRS partners that are no
    suspect, one per class it reaches first (its switch's pair crosses no
    link: slow there too, it is the node, not its switch's uplink), then any.
    links: suspect links as (kind, the nodes behind it): 'switch' (an
    uplink: its nodes' other path is their switch) or 'group' (a group's
    link: their group). Each gets CONFIRM_LINK_PAIRS pairs: half between
    its nodes and partners on its side (not crossing it: fine there, the
    link is slow, not its nodes), half through it to healthy far ends, each
    behind a different switch or group (slow to all of them: this link,
    not one far end's). Reproducible from the batch number."""
    rng = random.Random(f"rooftop confirm {topo.n} {batch}")
    taken = {(min(p), max(p)) for p in chosen}
    suspect = set(nodes) | {x for _, behind in links for x in behind}
    adds: list[Pair] = []

    def fresh(a: int, cands: list[int]) -> int | None:
        cands = [b for b in cands if b != a and (min(a, b), max(a, b)) not in taken]
        cands = [b for b in cands if usable is None or usable(min(a, b), max(a, b))]
        if not cands:
            return None
        b = rng.choice(cands)
        taken.add((min(a, b), max(a, b)))
        adds.append((min(a, b), max(a, b)))
        return b

    healthy = [x for x in range(topo.n) if x not in suspect]
    for n in nodes:
        got = 0
        for c in ("switch", "group", "global", "all"):
            got += fresh(n, [b for b in healthy if topo.klass(n, b) == c]) is not None
        while got < CONFIRM_NODE_PAIRS and fresh(n, healthy) is not None:
            got += 1
    for kind, behind in links:
        side = topo.switch if kind == "switch" else topo.group
        inside = [x for x in range(topo.n) if x not in nodes]
        got = 0
        for a in rng.sample(behind, len(behind)):
            if got >= CONFIRM_LINK_PAIRS // 2:
                break
            got += fresh(a, [b for b in inside if side[b] == side[a]]) is not None
        far: set[str] = set()
        for a in rng.sample(behind, len(behind)):
            if len(far) >= CONFIRM_LINK_PAIRS - CONFIRM_LINK_PAIRS // 2:
                break
            b = fresh(a, [b for b in healthy if side[b] != side[a] and side[b] not in far])
            if b is not None:
                far.add(side[b])
    return adds


def recorded(cfg: dict) -> list[list[Pair]]:
    """The batches of pairs a run recorded ("pair_sample"); without a
    record, the first batch drawn from the run's topology (no exclusion
    rule known here)."""
    rec = cfg.get("pair_sample")
    if rec:
        pairs = [tuple(p) for p in rec["pairs"]]
        out, i = [], 0
        for size in rec["batches"]:
            out.append(pairs[i : i + size])
            i += size
        return out
    return [first_draw(topology_of(cfg), cfg["collect"]["sample_min_pairs"])]


def topology_of(cfg: dict) -> Topology:
    """The run's recorded topology, or one class."""
    return of_config(cfg) or Topology.flat(len(cfg["nodes"]))


def plan(cfg: dict) -> list[Placement]:
    topo, cores = topology_of(cfg), known_cores(cfg)
    return placements([r for batch in recorded(cfg) for r in schedule(batch, topo, cores)], cfg)


#: The spread of pair rates within a class (standard deviation over the
#: mean) `rooftop plan` assumes for the width each class's interval reaches.
PLAN_SPREAD = 0.05


def planned(cfg: dict, topology: Topology | None = None) -> tuple[Topology, list[Pair]]:
    """The topology and the first batch of pairs for the config's nodes:
    the run's record when it has one (as plan() measures it), else drawn
    from `topology` (None: the run's recorded topology, or one class)."""
    topo = topology or topology_of(cfg)
    if cfg.get("pair_sample"):
        return topo, recorded(cfg)[0]
    return topo, first_draw(topo, cfg["collect"]["sample_min_pairs"])


def expected_classes(cfg: dict, topology: Topology | None = None, cv: float = PLAN_SPREAD) -> dict[str, dict]:
    """Per class of the first batch (its name, rooftop.topology.CLASSES):
    {"pairs": drawn, "of": the class's pairs, "width": the half-width of
    its interval over the mean if its pairs' rates spread by cv (their
    standard deviation over their mean)}: whether the first batch is likely
    the last (width within collect.sample_width) or more will follow."""
    topo, drawn = planned(cfg, topology)
    return _classes(cfg, topo, drawn, cv)


def _classes(cfg: dict, topo: Topology, drawn: list[Pair], cv: float) -> dict[str, dict]:
    conf = cfg["collect"]["sample_confidence"]
    per_class = Counter(topo.klass(*p) for p in drawn)  # (one pass, not one per class)
    out = {}
    for cls, of in topo.sizes().items():
        k = per_class[cls]
        width = t_quantile(0.5 + conf / 2, k - 1) * cv / math.sqrt(k) if k >= 2 else None
        out[CLASSES[cls]] = {"pairs": k, "of": of, "width": width}
    return out


def expected(cfg: dict, topology: Topology | None = None) -> PairsExpected:
    """The first batch on the config's nodes (topology as planned()), in
    rounds as schedule() puts them, each a placement; per class its pairs
    and the width its interval would reach at PLAN_SPREAD. More pairs
    follow only where a class's spread needs them."""
    topo, drawn = planned(cfg, topology)
    scheduled = schedule(drawn, topo, known_cores(cfg))
    rounds = len(scheduled)
    classes = _classes(cfg, topo, drawn, PLAN_SPREAD)
    return PairsExpected(
        pairs=len(drawn),
        rounds=rounds,
        widest=max((len(r) for r in scheduled), default=0),
        placements=rounds,
        server_nodes=len(drawn),
        by_class={c: v["pairs"] for c, v in classes.items()},
        interval=cfg["collect"]["sample_width"],
        spread=PLAN_SPREAD,
        widths={c: v["width"] for c, v in classes.items()},
        follow_up={"node": CONFIRM_NODE_PAIRS, "link": CONFIRM_LINK_PAIRS},
    )


STRATEGY = PairStrategy(
    "sample",
    "node pairs drawn by topology class (same switch, same group, across groups; collect.topology), "
    "every node in at least collect.sample_min_pairs pairs, more added until each class's client ceiling "
    "interval is within collect.sample_width (or collect.sample_budget pairs); measured in rounds of "
    "pairs that share no node nor switch link",
    plan,
    expected,
    KEYS,
    adaptive=True,
)
