"""The largest error, in ulp, of the compiled DyT/Derf kernel's f in float over every float from 0 to a bound.

    python scripts/every_float.py tanh 9.1                           # the build torch dispatches for here
    ATEN_CPU_CAPABILITY=default python scripts/every_float.py tanh 9.1  # the plain build (no SIMD)

f is odd (its sign is the input's), so the positive floats are all of it. The error is |f(x) - exact| over the
ulp of the exact (float64) value rounded to float, as tests/norms/test_elementwise_cpu.py measures it (a NaN or
infinite result where the exact value is finite counts as an infinite error); the worst inputs go into that test's
grid. About 2 minutes for tanh to 9.1 (1.09e9 floats) on one core.
"""

from __future__ import annotations

import argparse

import torch

from normbench.norms import elementwise_cpu

EXACT = {"tanh": torch.tanh, "erf": torch.erf}
CHUNK = 1 << 20  # floats a step: larger chunks spent more time allocating than computing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("function", choices=sorted(EXACT))
    parser.add_argument("bound", type=float, help="the largest input checked (every float from 0 to it)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    kernel = elementwise_cpu.KERNEL
    kernel.load(required=True)
    last = int(torch.tensor(args.bound, dtype=torch.float32).view(torch.int32))
    worst, at = 0.0, 0.0
    for start in range(0, last + 1, CHUNK):
        x = torch.arange(start, min(start + CHUNK, last + 1), dtype=torch.int32).view(torch.float32)
        got = kernel.module.forward(x.reshape(1, -1), 1.0, -0.0, elementwise_cpu.FUNCTIONS[args.function])
        exact = EXACT[args.function](x.double())
        rounded = exact.float().abs()
        ulp = torch.nextafter(rounded, torch.full_like(rounded, float("inf"))) - rounded
        error = ((got.reshape(-1).double() - exact).abs() / ulp.double()).nan_to_num(nan=float("inf"))
        if error.max().item() > worst:
            worst, at = error.max().item(), x[error.argmax()].item()
    print(f"{args.function}, build {kernel.variant}, every float in [0, {args.bound}]: "
          f"largest error {worst:.4f} ulp, at {at:.9g}")


if __name__ == "__main__":
    main()
