"""The Ray driver of `ranklab ... --cluster ray://HOST:PORT` (built into the ranklab binary).

ranklab starts this script, writes one JSON line per shard to run on its stdin, and reads one
JSON line per finished attempt from its stdout. Each shard runs as one Ray task (1 CPU, no Ray
retries: ranklab decides what to retry and counts it) that runs `ranklab work KIND` on the node
the task landed on and returns the record file's bytes, which this script writes where ranklab
asked. The binary and the model files must be on a path every node can read (on one machine,
the same paths). ranklab verifies every file itself; this script trusts nothing and checks
nothing but transport.

stdin:  {"shard": i, "attempt": n, "kind": "embed"|"score", "model": ID, "args": [...],
         "input": PATH, "output": PATH, "avoid": [NODE_ID, ...]}   (EOF: no more shards)
stdout: {"ready": true, "ray": VERSION, "nodes": N}  once connected, then per attempt
        {"shard": i, "attempt": n, "ok": BOOL, "node": NODE_ID|null, "seconds": S, "error": STR|null}
        or {"fatal": MESSAGE} (then exit 1)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--address", required=True)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for ranklab work")
    opts = ap.parse_args()
    env = dict(kv.split("=", 1) for kv in opts.env)

    import ray
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
    try:
        ray.init(address=opts.address, logging_level="ERROR", log_to_driver=False, **kwargs)
    except Exception as e:  # noqa: BLE001 - reported to ranklab as is
        say({"fatal": f"cannot connect to the Ray cluster at {opts.address}: {e}"})
        return 1

    @ray.remote(num_cpus=1, max_retries=0)
    def run_shard(binary, env, kind, model, args, data):
        node = ray.get_runtime_context().get_node_id()
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
        return [n["NodeID"] for n in ray.nodes()
                if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]

    say({"ready": True, "ray": ray.__version__, "nodes": len(alive_nodes())})

    commands = queue.Queue()

    def read_stdin():
        for line in sys.stdin:
            if line.strip():
                commands.put(json.loads(line))
        commands.put(None)

    threading.Thread(target=read_stdin, daemon=True).start()
    pending = {}  # ref -> (command, started, node asked for)
    more = True
    while more or pending:
        while True:
            try:
                cmd = commands.get(timeout=0 if pending or not more else 0.2)
            except queue.Empty:
                break
            if cmd is None:
                more = False
                break
            with open(cmd["input"], "rb") as f:
                data = f.read()
            options = {}
            others = [n for n in alive_nodes() if n not in cmd.get("avoid", [])]
            target = None
            if cmd.get("avoid") and others:
                target = others[cmd["attempt"] % len(others)]
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(target, soft=True)
            ref = run_shard.options(**options).remote(
                opts.binary, env, cmd["kind"], cmd["model"], cmd.get("args", []), data)
            pending[ref] = (cmd, time.monotonic(), target)
        if not pending:
            continue
        done, _ = ray.wait(list(pending), num_returns=1, timeout=0.2)
        for ref in done:
            cmd, started, target = pending.pop(ref)
            out = {"shard": cmd["shard"], "attempt": cmd["attempt"], "ok": False,
                   "node": target, "error": None}
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
            except Exception as e:  # noqa: BLE001 - a lost node, a crashed worker: retried by ranklab
                out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            out["seconds"] = round(time.monotonic() - started, 3)
            say(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
