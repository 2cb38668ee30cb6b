"""ONNX Runtime 1.32's MatMulIntegerToFloat with a per-row a_scale and a bias input: which
formula it computes, on a small random case against numpy (pertoken.py's finding: the bias is
multiplied by the row scale, (acc * s_w + bias) * s_r, so a fused per-row graph is wrong without
an error; pertoken.py writes the node without its bias and keeps the graph's Add).

    python pertoken_bias_check.py   (robust.py's venv)
"""
import numpy as np, onnx, onnxruntime as ort
from onnx import helper, numpy_helper, TensorProto as TP
rng=np.random.default_rng(0); T,K,N=5,16,7
A=rng.integers(0,256,(1,T,K)).astype(np.uint8); W=rng.integers(-127,128,(K,N)).astype(np.int8)
asc=(rng.random((1,T,1))+0.5).astype(np.float32); bsc=np.float32(0.01); bias=rng.standard_normal(N).astype(np.float32)
inits=[numpy_helper.from_array(W,"W"),numpy_helper.from_array(np.int8(0),"wzp"),numpy_helper.from_array(np.uint8(128),"azp"),numpy_helper.from_array(bsc,"bsc"),numpy_helper.from_array(bias,"bias")]
nodes=[helper.make_node("MatMulIntegerToFloat",["A","W","asc","bsc","azp","wzp","bias"],["Y"],domain="com.microsoft")]
g=helper.make_graph(nodes,"g",[helper.make_tensor_value_info("A",TP.UINT8,[1,None,K]),helper.make_tensor_value_info("asc",TP.FLOAT,[1,None,1])],[helper.make_tensor_value_info("Y",TP.FLOAT,None)],initializer=inits)
m=helper.make_model(g,opset_imports=[helper.make_opsetid("",14),helper.make_opsetid("com.microsoft",1)]); m.ir_version=8
o=ort.SessionOptions(); o.intra_op_num_threads=1
y=ort.InferenceSession(m.SerializeToString(),o,providers=["CPUExecutionProvider"]).run(None,{"A":A,"asc":asc})[0]
acc=((A.astype(np.int64)-128)@W.astype(np.int64)).astype(np.float32)
print("vs acc*s_r*s_w+bias", np.abs(y-(acc*asc*bsc+bias)).max())
print("vs (acc*s_w+bias)*s_r", np.abs(y-((acc*bsc+bias)*asc)).max())
print("vs acc*s_0*s_w+bias", np.abs(y-(acc*asc.ravel()[0]*bsc+bias)).max())
