"""Helpers for the emulated cluster's tests: why a cluster cannot be built
here (then those tests skip), and the 'rooftop cluster' CLI."""

from __future__ import annotations

import json
import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "campaign"))

from campaign_util import rooftop  # noqa: E402


def _why_no_cluster() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc, cgroups)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed (apt-get install iproute2)"
    from rooftop.cluster import cgroups, state
    from rooftop.cluster.spec import ClusterError

    try:
        cgroups.detect()
    except ClusterError as e:
        return str(e)
    if state.load() is not None:
        return (
            f"an emulated cluster is already up on this machine ({state.path()}); the tests would "
            f"remove it: run 'rooftop cluster down' first"
        )
    return None


needs_root = pytest.mark.skipif(_why_no_cluster() is not None, reason=str(_why_no_cluster()))


def cluster(*args, check=True, timeout=60):
    return rooftop("cluster", *args, check=check, timeout=timeout)


def status_json() -> dict:
    return json.loads(cluster("status", "--json", check=False).stdout)


@contextmanager
def cluster_up(*args):
    """A cluster built with 'cluster up ARGS' (after removing any), always
    removed afterwards."""
    cluster("down")
    try:
        cluster("up", *args)
        yield
    finally:
        cluster("down")
