"""Fixtures for the emulated cluster's tests. Every fixture that builds a
cluster runs 'cluster down' in its teardown."""

from __future__ import annotations

import pytest
from cluster_util import cluster, cluster_up, status_json


@pytest.fixture
def clean():
    """No cluster before the test, none after it (whatever the test did)."""
    cluster("down")
    yield
    cluster("down")


@pytest.fixture(scope="module")
def cluster3():
    """3 nodes, every link shaped to 200 Mbit/s (2 cores: nodes 0 and 2 share one)."""
    with cluster_up("--nodes", "3", "--link-rate", "200mbit"):
        yield status_json()
