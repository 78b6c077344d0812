"""The reference semantics: numpy kernels of the `nn` ops, the untiled
executor of an `nn` module, and the onnxruntime oracle it is checked against.
"""
