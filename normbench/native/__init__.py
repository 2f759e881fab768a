"""Building normbench's C++ CPU kernels (``cpu_build``) and the row-wise headers they share
(``rows.h``, ``row_blocks.h`` for the cell kernels, ``norm_blocks.h`` for the norms' kernels): the floor below the models' cell kernels and the norms' compiled kernels."""
