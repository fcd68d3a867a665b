"""mpiexec across the emulated cluster's nodes: Open MPI's rsh agent.

Open MPI starts its daemon (orted) on a remote host by running
"<plm_rsh_agent> HOST COMMAND..." (ssh by default). 'cluster up' writes an
agent, <state dir>/mpi/rsh-agent, that instead joins HOST's cgroups and
enters its network namespace:

  host=$1; shift
  echo $$ > <HOST's cgroup.procs files>
  exec env TMPDIR=<state dir>/mpi/tmp/HOST nsenter --net=/run/netns/HOST sh -c "$*"

(nsenter --net, not 'ip netns exec', which remounts /sys and hides the
cgroup mounts). Every node has the machine's host name, so each gets its own
TMPDIR: orted's session directory is named after the host name and would
collide. With the node names in /etc/hosts (rooftop.cluster.hosts), the MCA
options of mca_args() (the agent, and TCP for Open MPI's own traffic on the
bridge's subnet) make "mpiexec --host rooftop-n1:2 ..." run its processes in
node 1, with node 1's address, cores and CPU cap. The mpiexec launcher adds
them by itself when its hosts are the cluster's nodes.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from rooftop import files
from rooftop.cluster import state


def directory() -> Path:
    return state.path().parent / "mpi"


def agent_path() -> Path:
    return directory() / "rsh-agent"


def agent_script(nodes: list[dict]) -> str:
    cases = "\n".join(
        f"  {shlex.quote(n['netns'])}) procs={shlex.quote(' '.join(n['cgroup_procs']))} ;;" for n in nodes
    )
    tmp = directory() / "tmp"
    nsenter = shutil.which("nsenter") or "nsenter"
    return f"""#!/bin/sh
# Open MPI's rsh agent for the emulated cluster (written by 'rooftop cluster up'):
# runs "$2..." in node $1's cgroups and network namespace.
host=$1; shift
case "$host" in
{cases}
  *) echo "rooftop rsh agent: '$host' is not a node of the emulated cluster" >&2; exit 255 ;;
esac
for f in $procs; do echo $$ > "$f" || exit 255; done
mkdir -p -m 700 {shlex.quote(str(tmp))}/"$host" || exit 255
exec env TMPDIR={shlex.quote(str(tmp))}/"$host" {nsenter} --net=/run/netns/"$host" sh -c "$*"
"""


def write_agent(nodes: list[dict]) -> Path:
    d = directory()
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o755)
    return files.write(agent_path(), agent_script(nodes), mode=0o755)


def remove() -> list[str]:
    d = directory()
    if not d.exists():
        return []
    shutil.rmtree(d, ignore_errors=True)
    return [f"mpi {d}"]


def mca_args(st: dict) -> list[str]:
    """Open MPI options for mpiexec across the nodes of the cluster state st."""
    subnet = st["mpi"]["subnet"]
    return [
        "--mca",
        "plm_rsh_agent",
        st["mpi"]["rsh_agent"],
        "--mca",
        "oob_tcp_if_include",
        subnet,
        "--mca",
        "btl_tcp_if_include",
        subnet,
    ]
