"""TiGrIS-IR: fit neural networks into the SRAM of a microcontroller."""

__version__ = "0.1.0"
