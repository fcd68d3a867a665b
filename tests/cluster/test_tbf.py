"""The tc tbf arguments the emulated cluster shapes a link with (no cluster,
no root): the bucket lets no 1 s window read more than 1 % above the link
(issue 42: 64 KiB let two 1 s pair windows at 4 Mbit/s read 5-8 % above it)."""

from __future__ import annotations

import pytest

from rooftop.cluster import net


@pytest.mark.parametrize("rate_bits", [4_000_000, 10**7, 3 * 10**7, 10**8, 2 * 10**8, 10**9, 10**10])
def test_a_1s_window_reads_within_1_percent_of_the_link(rate_bits, monkeypatch):
    ran = []
    monkeypatch.setattr(net, "run", lambda cmd, **kw: ran.append(cmd))
    net.shape("rooftop-p0", rate_bits, "rooftop-n0")
    (cmd,) = ran
    assert cmd[:8] == ["tc", "-n", "rooftop-n0", "qdisc", "replace", "dev", "rooftop-p0", "root"]
    args = dict(zip(cmd[9::2], cmd[10::2]))
    assert cmd[8] == "tbf" and args["rate"] == f"{rate_bits}bit" and args["latency"] == "50ms"
    burst, per_s = int(args["burst"]), rate_bits / 8
    # A window of T s can read the whole bucket on top of R x T.
    assert burst <= 0.01 * per_s, burst
    # A full frame (1500-byte MTU and its Ethernet header) must fit, with
    # one more and a kernel tick's tokens for a dequeue held back by a tick.
    assert burst >= 2 * 1514 and burst >= per_s / 250
    if rate_bits >= 10**9:
        assert burst >= 64 * 1024  # a whole GSO packet: tbf does not cut frames at high rates
