"""normbench: which normalization should this sequence model use, where, and with what settings."""

__version__ = "0.1.0"
