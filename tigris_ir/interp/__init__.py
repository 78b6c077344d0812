"""Interpretation on numpy: band compute, the tile schedule and the loop-level
IR executed in a fast arena of exactly the planned size, with measured peaks
and traffic.
"""
