"""Planning: the neutral graph, the tiling formulas and band model of
spec/tiling.md, memory accounting, stage cuts, chains, line buffers, static
arena placement, and the bridge from a plan to the `tile` IR.
"""
