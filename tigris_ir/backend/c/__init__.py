"""The C backend: band kernels, the GEBP micro-kernel generator, whole
networks as one C99 unit, and the host build and run harness.
"""
