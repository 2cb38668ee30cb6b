"""The Ray driver of `ranklab ... --cluster ray://HOST:PORT` (built into the ranklab binary).

ranklab starts this script, writes one JSON line per shard to run on its stdin, and reads one
JSON line per finished attempt from its stdout. Each shard runs as one Ray task (1 CPU, no Ray
retries: ranklab decides what to retry and counts it) that runs `ranklab work KIND` on the node
the task landed on and returns the file's bytes (a record file; a model file for finetune), which this script writes where ranklab
asked. The binary and the model files must be on a path every node can read (on one machine,
the same paths). ranklab verifies every file itself; this script trusts nothing and checks
nothing but transport.

Placement is this script's, not Ray's: every attempt is pinned to one node (hard node affinity),
at most as many at once on a node as it has CPUs, so a failed attempt always names the node it
failed on. A retry is placed away from the nodes its shard failed on (`avoid`) while another
node is alive; a node where an attempt was lost to Ray (the node died, its worker crashed, the
result was lost) gets no further shards, because the GCS still lists a killed node as alive for
its health-check period (RAY_health_check_period_ms x RAY_health_check_failure_threshold, 15 s
by default).

stdin:  {"shard": i, "attempt": n, "kind": "embed"|"score"|"grade"|"finetune", "model": ID, "args": [...],
         "input": PATH, "output": PATH, "avoid": [NODE_ID, ...]}   (EOF: no more shards)
stdout: {"ready": true, "ray": VERSION, "nodes": N, "driver_node": NODE_ID} once connected,
        then per attempt
        {"shard": i, "attempt": n, "ok": BOOL, "node": NODE_ID, "seconds": S, "error": STR|null}
        or {"fatal": MESSAGE} (then exit 1)

Test hook, off unless the variable is set (tests/ray_cluster.rs sets it):
RANKLAB_TEST_ONLY_WRONG_RECORDS=KIND:SHARD:HOW[,...] makes the first attempt of shard SHARD of
every KIND request return a real record file that must be refused: HOW=keys computes the shard
with its first text (or query) changed, so the file holds a key not asked for and lacks one;
HOW=model (score only) computes it at another --batch, a cross-encoder identity that is not the
one asked for.
"""

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

PINNED = "2.40.0"


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def wrong_records_hook():
    """{(kind, shard): how} from RANKLAB_TEST_ONLY_WRONG_RECORDS (see the module's doc)."""
    hook = {}
    for part in filter(None, os.environ.get("RANKLAB_TEST_ONLY_WRONG_RECORDS", "").split(",")):
        kind, shard, how = part.split(":")
        if how not in ("keys", "model") or (how == "model" and kind != "score"):
            raise ValueError(f"RANKLAB_TEST_ONLY_WRONG_RECORDS: cannot make {part!r}")
        hook[(kind, int(shard))] = how
    return hook


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--address", required=True)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for ranklab work")
    opts = ap.parse_args()
    env = dict(kv.split("=", 1) for kv in opts.env)
    hook = wrong_records_hook()

    import ray
    from ray.exceptions import RayTaskError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if ray.__version__ != PINNED:
        say({"fatal": f"ray {ray.__version__} is installed; the driver is pinned to ray=={PINNED} "
                      "(harness/ray/requirements.txt)"})
        return 1
    kwargs = {}
    if not opts.address.startswith("ray://"):
        # A node's GCS address: this machine is a node of the cluster; attach to the raylet of
        # the address given (Ray would otherwise pick one by the machine's outward address).
        kwargs["_node_ip_address"] = opts.address.rsplit(":", 1)[0]
    # Up to 3 connections: on a busy machine the Ray Client server's first driver for a fresh
    # cluster can be slow enough to fail its own ray.init ("Initialization failure from server:
    # ... Perhaps you called ray.init twice by accident?", seen in tests/ray_cluster.rs); the
    # next client gets a new one.
    for attempt in range(1, 4):
        try:
            ray.init(address=opts.address, logging_level="ERROR", log_to_driver=False, **kwargs)
            break
        except Exception as e:  # noqa: BLE001 - reported to ranklab as is
            print(f"connection {attempt} of 3 to {opts.address} failed: {e}", file=sys.stderr,
                  flush=True)
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001 - nothing to shut down
                pass
            if attempt == 3:
                say({"fatal": f"cannot connect to the Ray cluster at {opts.address}: {e}"})
                return 1
            time.sleep(2)

    @ray.remote(num_cpus=1, max_retries=0)
    def run_shard(binary, env, kind, model, args, data, wrong):
        node = ray.get_runtime_context().get_node_id()
        if wrong == "keys":
            first, _, rest = data.partition(b"\n")
            line = json.loads(first)
            line["text" if kind == "embed" else "query"] += " [a key not asked for]"
            data = json.dumps(line).encode() + b"\n" + rest
        elif wrong == "model":
            batch = args[args.index("--batch") + 1] if "--batch" in args else "1"
            args = [a for i, a in enumerate(args)
                    if a != "--batch" and (i == 0 or args[i - 1] != "--batch")]
            args += ["--batch", "3" if batch == "2" else "2"]
        with tempfile.TemporaryDirectory(prefix="ranklab-shard-") as d:
            inp, out = os.path.join(d, "in.jsonl"), os.path.join(d, "out.rec")
            with open(inp, "wb") as f:
                f.write(data)
            e = dict(os.environ)
            e.update(env)
            cmd = [binary, "work", kind, "--model", model, "--in", inp, "--out", out,
                   "--workers", "1", *args]
            p = subprocess.run(cmd, env=e, capture_output=True)
            if p.returncode != 0:
                tail = p.stderr.decode("utf-8", "replace")[-2000:].strip()
                return {"node": node, "ok": False,
                        "error": f"ranklab work exited {p.returncode}: {tail}"}
            with open(out, "rb") as f:
                return {"node": node, "ok": True, "records": f.read()}

    def alive_nodes():
        """{node id: CPUs} of the live nodes that have CPUs."""
        return {n["NodeID"]: int(n["Resources"]["CPU"]) for n in ray.nodes()
                if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1}

    nodes = alive_nodes()
    say({"ready": True, "ray": ray.__version__, "nodes": len(nodes),
         "driver_node": ray.get_runtime_context().get_node_id()})

    commands = queue.Queue()

    def read_stdin():
        for line in sys.stdin:
            if line.strip():
                commands.put(json.loads(line))
        commands.put(None)

    threading.Thread(target=read_stdin, daemon=True).start()
    waiting = []  # commands not yet placed, retries first
    pending = {}  # ref -> (command, started, node)
    busy = {}  # node -> attempts in flight
    lost = set()  # nodes an attempt was lost on (see the module's doc)
    refreshed = time.monotonic()
    more = True
    while more or pending or waiting:
        while more:
            try:
                cmd = commands.get(timeout=0 if pending or waiting else 0.2)
            except queue.Empty:
                break
            if cmd is None:
                more = False
                break
            if cmd["attempt"] > 1:
                waiting.insert(0, cmd)
            else:
                waiting.append(cmd)
        if time.monotonic() - refreshed > 1.0:
            nodes, refreshed = alive_nodes(), time.monotonic()
        usable = {n: c for n, c in nodes.items() if n not in lost}
        if waiting and not usable:
            say({"fatal": "no live node with a CPU is left in the cluster"
                          + (f" ({len(lost)} lost during this run)" if lost else "")})
            return 1
        for cmd in list(waiting):
            free = [n for n, c in usable.items() if busy.get(n, 0) < c]
            others = [n for n in free if n not in cmd.get("avoid", [])]
            # Away from the nodes this shard failed on, unless no other node is alive.
            if not set(usable) - set(cmd.get("avoid", [])):
                others = free
            if not others:
                continue
            node = min(others, key=lambda n: (busy.get(n, 0) / usable[n], n))
            waiting.remove(cmd)
            with open(cmd["input"], "rb") as f:
                data = f.read()
            wrong = hook.get((cmd["kind"], cmd["shard"])) if cmd["attempt"] == 1 else None
            ref = run_shard.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            ).remote(opts.binary, env, cmd["kind"], cmd["model"], cmd.get("args", []), data,
                     wrong)
            busy[node] = busy.get(node, 0) + 1
            pending[ref] = (cmd, time.monotonic(), node)
        if not pending:
            time.sleep(0.05)
            continue
        done, _ = ray.wait(list(pending), num_returns=1, timeout=0.2)
        for ref in done:
            cmd, started, node = pending.pop(ref)
            busy[node] -= 1
            out = {"shard": cmd["shard"], "attempt": cmd["attempt"], "ok": False,
                   "node": node, "error": None}
            try:
                r = ray.get(ref)
                out["node"] = r["node"]
                if r["ok"]:
                    tmp = cmd["output"] + ".part"
                    with open(tmp, "wb") as f:
                        f.write(r["records"])
                    os.replace(tmp, cmd["output"])
                    out["ok"] = True
                else:
                    out["error"] = r["error"]
            except RayTaskError as e:  # the task's own code failed: the shard is retried
                out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            except Exception as e:  # noqa: BLE001 - a lost node, a crashed worker, lost result
                lost.add(node)
                out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            out["seconds"] = round(time.monotonic() - started, 3)
            say(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
