"""Interpretation on numpy: the loop-level IR run by the loop machine with
band compute (`loop_ir`: every plan runs there, in arenas of exactly the
planned sizes, with measured peaks and traffic, `run_stats`), the band
kernels of the `nn` ops (`band_exec`), the register-tiled loops of an
`rtile.kernel` (`rtile_exec`) and the untiled oracle of a plan (`untiled`).
"""
