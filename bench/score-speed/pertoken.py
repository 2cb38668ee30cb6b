#!/usr/bin/env python3
"""Per-row (per-token) activation quantization variants of the pinned int8 ms-marco-MiniLM-L-12-v2
graph: same int8 weight initializers and scales, each DynamicQuantizeLinear (per-tensor uint8) replaced
by a per-row quantizer over the last axis of the [.., tokens, hidden] activation.

    cd bench/score-speed && python pertoken.py [ROUNDS] [VARIANTS]   (robust.py's venv; EVALS=eval48.jsonl,eval96.jsonl,rel48.jsonl
    from pairs.py as docs/speed.md says; OUT=<folder for the graphs>; raw figures of 2026-12-07: pertoken-start.json)

Error: against the float oracle of eval_export.py `own` (pinned weights dequantized, every matrix and
table float), via candidates/smoothquant/robust beside this file (imported, unmodified).
Speed: eval48 pairs/s, one single-threaded session each, rotated order per round, ratio to pinned.
"""
import json
import os
import sys
import time
import traceback

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import candidates as c  # noqa: E402
import robust as r  # noqa: E402
import smoothquant as sq  # noqa: E402

M = os.path.join(os.environ.get("RANKLAB_CACHE", os.path.expanduser("~/.cache/ranklab")), "models/ms-marco-MiniLM-L-12-v2")
BASE = M + "/model.onnx"
EVALS = os.environ.get("EVALS", "eval48.jsonl,eval96.jsonl,rel48.jsonl").split(",")
OUT = os.environ.get("OUT", "/tmp/pertoken")
EPS = np.float32(1e-8)


# ---------------------------------------------------------------- graph surgery
class G:
    def __init__(self):
        self.m = onnx.load(BASE)
        self.g = self.m.graph
        self.inits = {i.name: i for i in self.g.initializer}
        self.new_inits = {}
        self.k = 0

    def const(self, name, arr):
        if name not in self.new_inits and name not in self.inits:
            self.new_inits[name] = numpy_helper.from_array(np.asarray(arr), name)
        return name

    def node(self, out_list, op, inputs, outputs=None, **attrs):
        self.k += 1
        outs = outputs or [f"pt_{op}_{self.k}"]
        out_list.append(helper.make_node(op, inputs, outs, name=f"pt_{op}_{self.k}", **attrs))
        return outs[0]

    def finish(self, nodes):
        del self.g.node[:]
        self.g.node.extend(nodes)
        self.g.initializer.extend(self.new_inits.values())
        return self.m.SerializeToString()


def consumers(g, name):
    return [n for n in g.node if name in n.input]


def row_absmax_scale(G_, L, x, qmax, out):
    """scale_r = max(max|x_r|, eps) / qmax, shape [..., T, 1]."""
    a = G_.node(L, "Abs", [x])
    m = G_.node(L, "ReduceMax", [a], axes=[-1], keepdims=1)
    m = G_.node(L, "Max", [m, G_.const("pt_eps", EPS)])
    return G_.node(L, "Div", [m, G_.const(f"pt_q{qmax}", np.float32(qmax))], [out])


def build(variant):
    """Returns (model bytes, nodes added). Suffix -mmitf: explicit com.microsoft MatMulIntegerToFloat
    (a_scale = row scale, no bias input; the graph's bias Add stays); -split: Cast -> Mul(weight scale)
    -> Mul(row scale), so ORT's fusion sees a scalar scale."""
    post = None
    for suf in ("-mmitf", "-split"):
        if variant.endswith(suf):
            variant, post = variant[: -len(suf)], suf[1:]
    G_ = G()
    g = G_.g
    n0 = len(g.node)
    L = []
    # weight column sums of every MatMulInteger (for the asymmetric correction)
    for n in g.node:
        if n.op_type != "DynamicQuantizeLinear":
            L.append(n)
            continue
        x = n.input[0]
        q_name, s_name, zp_name = n.output
        if variant == "pinned-copy":
            L.append(n)
            continue
        if variant in ("sym-s8", "sym-u8", "sym-s8-mul"):
            s = row_absmax_scale(G_, L, x, 127, s_name)
            if variant == "sym-s8-mul":
                inv = G_.node(L, "Reciprocal", [s])
                y = G_.node(L, "Mul", [x, inv])
            else:
                y = G_.node(L, "Div", [x, s])
            y = G_.node(L, "Round", [y])
            if variant == "sym-u8":
                y = G_.node(L, "Add", [y, G_.const("pt_128f", np.float32(128))])
                G_.node(L, "Cast", [y], [q_name], to=TensorProto.UINT8)
                G_.const(zp_name, np.uint8(128))
            else:
                G_.node(L, "Cast", [y], [q_name], to=TensorProto.INT8)
                G_.const(zp_name, np.int8(0))
        elif variant in ("asym-u8-rowzp", "asym-u8-corr", "asym-u8"):
            # per-row DynamicQuantizeLinear: range includes 0, uint8, zp = round(-min/scale)
            hi = G_.node(L, "ReduceMax", [x], axes=[-1], keepdims=1)
            lo = G_.node(L, "ReduceMin", [x], axes=[-1], keepdims=1)
            zero = G_.const("pt_0f", np.float32(0))
            hi = G_.node(L, "Max", [hi, zero])
            lo = G_.node(L, "Min", [lo, zero])
            rng = G_.node(L, "Sub", [hi, lo])
            rng = G_.node(L, "Max", [rng, G_.const("pt_eps", EPS)])
            s = G_.node(L, "Div", [rng, G_.const("pt_q255", np.float32(255))], [s_name])
            zpf = G_.node(L, "Round", [G_.node(L, "Div", [G_.node(L, "Neg", [lo]), s])], [zp_name + "_f"])
            y = G_.node(L, "Add", [G_.node(L, "Round", [G_.node(L, "Div", [x, s])]), zpf])
            y = G_.node(L, "Clip", [y, zero, G_.const("pt_255f", np.float32(255))])
            G_.node(L, "Cast", [y], [q_name], to=TensorProto.UINT8)
            if variant == "asym-u8-rowzp":
                # try MatMulInteger's own per-row a_zero_point (uint8 [.., T, 1])
                G_.node(L, "Cast", [zpf], [zp_name], to=TensorProto.UINT8)
            else:
                G_.const(zp_name, np.uint8(0))
        else:
            raise ValueError(variant)
    if variant in ("asym-u8-corr",):
        # y = s_r * s_w * (q.W - zp_r * colsum(W)): insert Mul+Sub after each Cast of a MatMulInteger
        L2 = []
        mmi = {n.output[0]: n for n in L if n.op_type == "MatMulInteger"}
        for n in L:
            L2.append(n)
            if n.op_type == "Cast" and n.input[0] in mmi:
                mm = mmi[n.input[0]]
                w = numpy_helper.to_array(G_.inits[mm.input[1]]).astype(np.int64)
                zpw = numpy_helper.to_array(G_.inits[mm.input[3]]).astype(np.int64)
                assert np.all(zpw == 0)
                cs = G_.const(mm.input[1] + "_colsum", w.sum(axis=0).astype(np.float32))
                corr = G_.node(L2, "Mul", [mm.input[2] + "_f", cs])
                out = n.output[0]
                n.output[0] = out + "_raw"
                G_.node(L2, "Sub", [out + "_raw", corr], [out])
        L = L2
    if post:
        L = rewrite_post(G_, L, post, asym=variant.startswith("asym"))
    added = len(L) - n0
    if post == "mmitf":
        G_.m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return G_.finish(L), added


def rewrite_post(G_, L, post, asym):
    prod = {o: n for n in L for o in n.output}
    cons = {}
    for n in L:
        for i in n.input:
            cons.setdefault(i, []).append(n)
    drop, repl, zs_done = set(), {}, {}
    for mm in [n for n in L if n.op_type == "MatMulInteger"]:
        cast = cons[mm.output[0]][0]
        omul = cons[cast.output[0]][0]
        smul = prod[omul.input[1]]  # Mul(a_scale, w_scale)
        a_scale, w_scale = smul.input
        assert w_scale in G_.inits, w_scale
        out = omul.output[0]
        new = []
        if post == "mmitf":
            raw = out + "_raw" if asym else out
            G_.node(new, "MatMulIntegerToFloat", [mm.input[0], mm.input[1], a_scale, w_scale, mm.input[2], mm.input[3]],
                    [raw], domain="com.microsoft")
            if asym:
                zp = mm.input[2]
                if zp not in zs_done:
                    zs_done[zp] = G_.node(new, "Mul", [zp + "_f", a_scale])
                w = numpy_helper.to_array(G_.inits[mm.input[1]]).astype(np.int64)
                sw = numpy_helper.to_array(G_.inits[w_scale]).astype(np.float32)
                cs = G_.const(mm.input[1] + "_colsum_scaled", (w.sum(axis=0).astype(np.float32) * sw).astype(np.float32))
                G_.node(new, "Sub", [raw, G_.node(new, "Mul", [zs_done[zp], cs])], [out])
            drop.update([id(cast), id(omul)])
        else:  # split
            assert not asym
            new = [mm]
            omul.input[1] = w_scale
            omul.output[0] = out + "_raw"
            G_.k += 1
            tail = helper.make_node("Mul", [out + "_raw", a_scale], [out], name=f"pt_rowmul_{G_.k}")
            repl[id(omul)] = [omul, tail]
        repl[id(mm)] = new
        drop.add(id(smul))
    outl = []
    for n in L:
        if id(n) in repl:
            outl.extend(repl[id(n)])
        elif id(n) not in drop:
            outl.append(n)
    return outl


# ---------------------------------------------------------------- tiny probes of ORT restrictions
def probe(name, nodes, inits, inputs, outputs, feed, opset=14, domains=()):
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    gr = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(gr, opset_imports=ops)
    m.ir_version = 8
    try:
        s = c.session(m.SerializeToString())
        out = s.run(None, feed)
        return {"ok": True, "out_shape": list(out[0].shape), "out": np.asarray(out[0]).ravel()[:6].tolist()}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": str(e).strip()}


def probes():
    rng = np.random.default_rng(0)
    T, K, N = 4, 8, 3
    A_u8 = rng.integers(0, 256, (1, T, K)).astype(np.uint8)
    A_s8 = rng.integers(-127, 128, (1, T, K)).astype(np.int8)
    W = numpy_helper.from_array(rng.integers(-127, 128, (K, N)).astype(np.int8), "W")
    wzp = numpy_helper.from_array(np.int8(0), "wzp")
    vi = lambda n, t, s: helper.make_tensor_value_info(n, t, s)
    res = {}
    # 1. MatMulInteger with per-row a_zero_point, shapes [1,T,1], [T], [1,T]
    for label, zshape in (("[1,T,1]", (1, T, 1)), ("[T]", (T,)), ("[1,T]", (1, T))):
        res[f"MatMulInteger u8s8 a_zero_point {label}"] = probe(
            "p", [helper.make_node("MatMulInteger", ["A", "W", "azp", "wzp"], ["Y"])], [W, wzp],
            [vi("A", TensorProto.UINT8, [1, T, K]), vi("azp", TensorProto.UINT8, list(zshape))],
            [vi("Y", TensorProto.INT32, None)],
            {"A": A_u8, "azp": rng.integers(0, 256, zshape).astype(np.uint8)})
    # 2. s8s8
    res["MatMulInteger s8s8 scalar zp"] = probe(
        "p", [helper.make_node("MatMulInteger", ["A", "W", "azp", "wzp"], ["Y"])],
        [W, wzp, numpy_helper.from_array(np.int8(0), "azp")],
        [vi("A", TensorProto.INT8, [1, T, K])], [vi("Y", TensorProto.INT32, None)], {"A": A_s8})
    # 3. MatMulIntegerToFloat (contrib) with per-row a_scale / a_zero_point
    bsc = numpy_helper.from_array(np.float32(0.01), "bsc")
    for label, shp in (("[1,T,1]", (1, T, 1)), ("[T]", (T,))):
        res[f"MatMulIntegerToFloat a_scale {label}"] = probe(
            "p", [helper.make_node("MatMulIntegerToFloat", ["A", "W", "asc", "bsc", "azp", "wzp"], ["Y"],
                                   domain="com.microsoft")],
            [W, wzp, bsc, numpy_helper.from_array(np.uint8(128), "azp")],
            [vi("A", TensorProto.UINT8, [1, T, K]), vi("asc", TensorProto.FLOAT, list(shp))],
            [vi("Y", TensorProto.FLOAT, None)],
            {"A": A_u8, "asc": rng.random(shp).astype(np.float32)}, domains=("com.microsoft",))
        res[f"MatMulIntegerToFloat a_zero_point {label}"] = probe(
            "p", [helper.make_node("MatMulIntegerToFloat", ["A", "W", "asc", "bsc", "azp", "wzp"], ["Y"],
                                   domain="com.microsoft")],
            [W, wzp, bsc, numpy_helper.from_array(np.float32(0.02), "asc")],
            [vi("A", TensorProto.UINT8, [1, T, K]), vi("azp", TensorProto.UINT8, list(shp))],
            [vi("Y", TensorProto.FLOAT, None)],
            {"A": A_u8, "azp": rng.integers(0, 256, shp).astype(np.uint8)}, domains=("com.microsoft",))
    # 4. per-axis QuantizeLinear with a dynamic scale (opset 13+): the alternative to Div/Round/Cast
    res["QuantizeLinear axis=1 dynamic scale [T]"] = probe(
        "p", [helper.make_node("QuantizeLinear", ["X", "s", "zp"], ["Y"], axis=1)],
        [numpy_helper.from_array(np.zeros(T, np.int8), "zp")],
        [vi("X", TensorProto.FLOAT, [1, T, K]), vi("s", TensorProto.FLOAT, [T])],
        [vi("Y", TensorProto.INT8, None)],
        {"X": rng.standard_normal((1, T, K)).astype(np.float32), "s": np.full(T, 0.05, np.float32)})
    return res


def optimized_ops(model_bytes, dis=()):
    """Op-type histogram of the graph after ORT's default (ORT_ENABLE_ALL) optimizations."""
    path = f"{OUT}/_opt.onnx"
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    o.inter_op_num_threads = 1
    o.optimized_model_filepath = path
    kw = {"disabled_optimizers": list(dis)} if dis else {}
    ort.InferenceSession(model_bytes, o, providers=["CPUExecutionProvider"], **kw)
    m = onnx.load(path)
    os.remove(path)
    h = {}
    for n in m.graph.node:
        h[n.op_type] = h.get(n.op_type, 0) + 1
    return dict(sorted(h.items(), key=lambda kv: -kv[1]))


def session(model_bytes, disabled=()):
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    o.inter_op_num_threads = 1
    kw = {"disabled_optimizers": list(disabled)} if disabled else {}
    return ort.InferenceSession(model_bytes, o, providers=["CPUExecutionProvider"], **kw)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    # NAME[|nofuse]: nofuse = session with ORT's MatMulIntegerToFloatFusion disabled
    want = sys.argv[2].split(",") if len(sys.argv) > 2 else [
        "sym-u8", "sym-u8|nofuse", "sym-s8|nofuse", "sym-u8-split", "sym-u8-mmitf",
        "asym-u8-rowzp", "asym-u8-corr", "asym-u8-mmitf"]
    report = {"model": BASE, "ort": ort.__version__, "probes": probes(), "variants": {}}
    print(json.dumps(report["probes"], indent=1), file=sys.stderr, flush=True)
    tok = c.Tokenizer.from_file(M + "/tokenizer.json")
    tok.enable_truncation(512, strategy="longest_first")
    tok.no_padding()
    enc = lambda p: [tok.encode(x["query"], x["passage"]) for x in map(json.loads, open(p))]
    ev = {p.split("/")[-1].rsplit(".", 1)[0]: enc(p) for p in EVALS}
    report["tokens_eval48"] = {"mean": float(np.mean([len(e.ids) for e in ev["eval48"]])),
                               "max": int(max(len(e.ids) for e in ev["eval48"]))}
    w = c.dequantized_start(BASE)
    fm, _ = sq.float_graph_with_inputs(BASE, w)
    fs = c.session(fm)
    orc = {k: c.score(fs, v) for k, v in ev.items()}
    del fs
    pinned_bytes = open(BASE, "rb").read()
    pinned = c.session(pinned_bytes)
    report["pinned"] = {"error": r.judged({k: c.score(pinned, v) for k, v in ev.items()}, orc),
                        "optimized_ops": optimized_ops(pinned_bytes)}
    print("pinned", report["pinned"]["error"], file=sys.stderr, flush=True)
    sessions = {"pinned": pinned}
    for v in want:
        entry = report["variants"].setdefault(v, {})
        try:
            gv, _, flag = v.partition("|")
            dis = ["MatMulIntegerToFloatFusion"] if flag == "nofuse" else []
            b, added = build(gv)
            entry["nodes_added"] = added
            if dis:
                entry["disabled_optimizers"] = dis
            onnx.save(onnx.load_from_string(b), f"{OUT}/{gv}.onnx")
            s = session(b, dis)
            entry["error"] = r.judged({k: c.score(s, x) for k, x in ev.items()}, orc)
            entry["optimized_ops"] = optimized_ops(b, dis)
            sessions[v] = s
        except Exception as e:  # noqa: BLE001
            entry["failed"] = str(e).strip()
            traceback.print_exc()
        print(v, json.dumps(entry), file=sys.stderr, flush=True)
    names = list(sessions)
    speeds = {n: [] for n in names}
    encs = ev["eval48"]
    for n in names:  # warm-up
        c.score(sessions[n], encs[:4])
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[: rnd % len(names)]
        if rnd % 2:
            order = order[::-1]
        for n in order:
            t = time.perf_counter()
            c.score(sessions[n], encs)
            speeds[n].append(len(encs) / (time.perf_counter() - t))
        print("round", rnd, {n: round(speeds[n][-1], 2) for n in names}, file=sys.stderr, flush=True)
    for n in names:
        ratios = [a / b for a, b in zip(speeds[n], speeds["pinned"])]
        sp = {"pairs_per_s": speeds[n], "median_pairs_per_s": float(np.median(speeds[n])),
              "ratios": ratios, "median_ratio_to_pinned": float(np.median(ratios))}
        (report["pinned"] if n == "pinned" else report["variants"][n]).update({"speed": sp})
    report["load_after"] = os.getloadavg()
    out = os.environ.get("RESULTS", f"{OUT}/results.json")
    json.dump(report, open(out, "w"), indent=1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
