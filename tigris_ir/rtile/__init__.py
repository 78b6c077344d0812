"""Register tiles: the GEBP model of spec/register_tile.md, the targets'
vector hardware as data, and autotuning of candidate tiles.
"""
