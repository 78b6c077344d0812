"""The frontend: ONNX models imported into the `nn` dialect (shapes, opsets,
QDQ fusion, the channels-last layout).
"""
