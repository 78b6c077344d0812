"""Backends: what the loop level is printed as.
"""
