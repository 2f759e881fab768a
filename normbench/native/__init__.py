"""Building normbench's C++ CPU kernels (``cpu_build``) and the row-wise headers they share
(``rows.h``, ``row_blocks.h``): the floor below the models' cell kernels and the norms' RMSNorm."""
