"""The arithmetic of one training step, counted by hand from the shapes (what-would.md, 1).

MiniLM-L12 cross-encoder (12 layers, hidden 384, 12 heads of 32, intermediate 1,536, vocabulary
30,522, 33,360,385 parameters), batch 16 pairs x 256 tokens = 4,096 rows. A multiply-add is 2
flops. Matrix products: forward `x . W^T` per linear layer, the attention's `Q.K^T` and `P.V`
per (pair, head); backward two products of the same size per forward product (the input's
gradient and the weight's, or for the attention the two operands'), so 3x the forward. The
elementwise work is counted per element with the operation counts stated beside it (erf and
exp as about 20 and 10 flops, a polynomial's length), to show its order of magnitude only.
Prints a JSON object.
"""

import json

L, H, HEADS, DH, I, B, T = 12, 384, 12, 32, 1536, 16, 256
PARAMS = 33_360_385
ROWS = B * T
BH = B * HEADS


def mm(m, k, n, batch=1):
    return 2 * batch * m * k * n


def main():
    fwd_layer = {
        "q, k, v, attention output: 4 x [4096x384].[384x384]": 4 * mm(ROWS, H, H),
        "scores Q.K^T: 192 x [256x32].[32x256]": mm(T, DH, T, BH),
        "context P.V: 192 x [256x256].[256x32]": mm(T, T, DH, BH),
        "intermediate (up): [4096x384].[384x1536]": mm(ROWS, H, I),
        "output (down): [4096x1536].[1536x384]": mm(ROWS, I, H),
    }
    per_layer = sum(fwd_layer.values())
    head = mm(B, H, H) + mm(B, H, 1)  # pooler and classifier on the [CLS] rows
    matmul_fwd = L * per_layer + head
    matmul_step = 3 * matmul_fwd
    hidden, probs, inter = ROWS * H, BH * T * T, ROWS * I
    # forward per layer: 6 bias adds (4 on hidden-sized, 1 intermediate, 1 hidden), 2
    # residual adds, 2 LayerNorms (~8 flops/element: mean, variance, normalize, scale, shift),
    # softmax with scale and mask (~5 + exp ~10), GELU (~5 + erf ~20).
    ew_fwd_layer = (5 * hidden + inter) + 2 * hidden + 2 * 8 * hidden + 15 * probs + 25 * inter
    ew_step = 3 * L * ew_fwd_layer  # backward about twice the forward
    adamw = 14 * PARAMS  # clip scale, two moments, bias corrections, sqrt, divide, decay, update
    step = matmul_step + ew_step + adamw
    out = {
        "forward_matmul_gflop_per_layer": {k: v / 1e9 for k, v in fwd_layer.items()},
        "forward_matmul_gflop_per_layer_total": per_layer / 1e9,
        "matmul_gflop_per_step": matmul_step / 1e9,
        "elementwise_gflop_per_step_approx": ew_step / 1e9,
        "adamw_gflop_per_step_approx": adamw / 1e9,
        "total_gflop_per_step": step / 1e9,
        "matmul_share_of_flops": matmul_step / step,
        "gflop_per_pair": step / B / 1e9,
        "matmul_gflop_per_pair": matmul_step / B / 1e9,
    }
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
