"""The loop level: the tile schedule a plan becomes, and the lifetimes,
placement and verification of buffers in loop-level IR.
"""
