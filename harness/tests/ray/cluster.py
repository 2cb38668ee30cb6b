"""A Ray cluster of several nodes on 127.0.0.1 for tests/ray_cluster.rs (ray 2.40.0).

Usage: python cluster.py TEMP_DIR WORKERS
Starts a head node (no CPU: it runs no task, only the GCS, the Ray Client server and a raylet)
and WORKERS worker nodes of one CPU each, every one with node IP 127.0.0.1 and its own raylet,
object store and agents (`ray.cluster_utils.Cluster`). Prints one JSON line once every node's
agents listen:
  {"client": "ray://127.0.0.1:PORT", "gcs": "127.0.0.1:PORT",
   "nodes": [{"id": NODE_ID, "head": BOOL, "raylet": PID}, ...]}
then reads commands on stdin, answering each with one JSON line:
  kill-busy NODE_ID  waits until a `ranklab work` runs below that node's raylet, then SIGKILLs
                     the raylet and every process below it (its workers, their `ranklab work`,
                     its agents): {"killed": NODE_ID, "busy": [PID, ...], "pids": [PID, ...]}
  wait-dead NODE_ID  waits until the GCS lists the node as dead: {"dead": NODE_ID}
  add                adds a worker node of one CPU: {"added": {"id": ..., "raylet": PID}}
On EOF (the test process exited, whatever way) it stops every process of the cluster, kills
any left that name TEMP_DIR or the GCS port, removes TEMP_DIR and exits.

Why not `ray start`: ray 2.40 binds its servers to 127.0.0.1 only when the node IP is exactly
"127.0.0.1" (e.g. ray/_private/runtime_env/agent/main.py:214, dashboard/agent.py:123,
_private/services.py:2206, and the GCS, raylet and core-worker gRPC servers), but `ray start`
replaces --node-ip-address=127.0.0.1 with the machine's outward address
(scripts/scripts.py:685 -> _private/services.py:631 resolve_ip_for_localhost -> :677
get_node_ip_address), and so does every ray.init(address="127.0.0.1:PORT")
(_private/services.py:552). get_node_ip_address answers "127.0.0.1" when
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER is false (_private/ray_constants.py:487,
_private/services.py:680); with it false `ray start --address` refuses to start a worker node
(scripts/scripts.py:940), which `cluster_utils.Cluster.add_node` does not check. So: that
variable, for this process and every process of the cluster (they inherit it), and
cluster_utils.
"""

import json
import os
import shutil
import signal
import socket
import sys
import threading
import time

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

IP = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((IP, 0))
        return s.getsockname()[1]


def listening(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((IP, port)) == 0


def ports():
    return {
        "dashboard_agent_listen_port": free_port(),
        "metrics_export_port": free_port(),
        "runtime_env_agent_port": free_port(),
    }


def children(pid):
    """Every process below `pid` (from /proc's parent links)."""
    parent = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        parent[int(e)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        frontier += kids
    return out


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def names_gcs(cmd, gcs):
    """Whether the command line `cmd` holds the address `gcs` (not as a prefix of a port)."""
    i = cmd.find(gcs)
    while i >= 0:
        end = i + len(gcs)
        if end == len(cmd) or not cmd[end:end + 1].isdigit():
            return True
        i = cmd.find(gcs, end)
    return False


def raylet_of(node):
    return node.all_processes["raylet"][0].process.pid


def describe(node, head):
    return {"id": node.node_id, "head": node is head, "raylet": raylet_of(node)}


def wait_listening(ports):
    # The Ray Client server asks the head's runtime-env agent for every new client and gives up
    # after about 15 s; on a loaded machine the agents take longer than that to start.
    deadline = time.monotonic() + 180
    while not all(listening(p) for p in ports):
        if time.monotonic() > deadline:
            raise SystemExit("the runtime-env agents never started")
        time.sleep(0.5)


def main():
    temp_dir, workers = sys.argv[1], int(sys.argv[2])
    # Also where cluster_utils writes its "current cluster" file (default /tmp/ray).
    os.environ["RAY_TMPDIR"] = temp_dir
    os.makedirs(os.path.join(temp_dir, "ray"), exist_ok=True)
    common = {"node_ip_address": IP, "object_store_memory": 100_000_000, "temp_dir": temp_dir}
    head_ports = ports()
    client_port = free_port()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            **common,
            **head_ports,
            "num_cpus": 0,
            "include_dashboard": False,
            "ray_client_server_port": client_port,
        },
    )
    head = cluster.head_node
    gcs_port = head.gcs_address.rsplit(":", 1)[1]
    try:
        agents = [head_ports["runtime_env_agent_port"]]
        nodes = [head]

        def add():
            p = ports()
            node = cluster.add_node(num_cpus=1, **common, **p)
            nodes.append(node)
            return node, p["runtime_env_agent_port"]

        for _ in range(workers):
            agents.append(add()[1])
        wait_listening(agents)
        print(json.dumps({
            "client": f"ray://{IP}:{client_port}",
            "gcs": head.gcs_address,
            "nodes": [describe(n, head) for n in nodes],
        }), flush=True)
        for line in sys.stdin:
            words = line.split()
            node = next((n for n in nodes if len(words) == 2 and n.node_id == words[1]), None)
            if words[:1] == ["kill-busy"] and node is not None:
                raylet = raylet_of(node)
                deadline = time.monotonic() + 120
                while True:
                    busy = [p for p in children(raylet) if b"\0work\0" in cmdline(p)]
                    if busy or time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                pids = children(raylet) + [raylet]
                for p in pids:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                print(json.dumps({"killed": node.node_id, "busy": busy, "pids": pids}),
                      flush=True)
            elif words[:1] == ["wait-dead"] and node is not None:
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    table = {n["NodeID"]: n["Alive"] for n in cluster.global_state.node_table()}
                    if not table.get(node.node_id, False):
                        break
                    time.sleep(0.5)
                print(json.dumps({"dead": node.node_id}), flush=True)
            elif words == ["add"]:
                new, agent = add()
                wait_listening([agent])
                print(json.dumps({"added": describe(new, head)}), flush=True)
            else:
                print(json.dumps({"error": f"unknown command {line.strip()!r}"}), flush=True)
    finally:
        # Bounded: a cluster that lost a node can hang in shutdown (seen once: the GCS ignored
        # its SIGTERM); what is left after 30 s is killed below.
        t = threading.Thread(target=cluster.shutdown, daemon=True)
        t.start()
        t.join(30)
        # What shutdown leaves (a Ray Client server's per-client driver names the GCS port
        # only): every process naming this cluster's directory or its GCS address.
        me = os.getpid()
        gcs = f"{IP}:{gcs_port}".encode()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for e in os.listdir("/proc"):
                if e.isdigit() and int(e) != me:
                    c = cmdline(e)
                    if temp_dir.encode() in c or names_gcs(c, gcs):
                        try:
                            os.kill(int(e), sig)
                        except ProcessLookupError:
                            pass
            time.sleep(0.5)
        shutil.rmtree(temp_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
