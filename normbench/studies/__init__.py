"""Many runs: the Hydra application `app` (one run, or a multirun and its end, `sweep_end`), the
callbacks a multirun registers (`progress`, `orphans`), the study runner `study` and the tuned study
`tune` (each runs its `normbench -m` child through `children`), and `compare`, which pairs two
sweeps' records (its command line is `compare_command`, which answers its arguments before pandas
loads). This package is the top floor: it may import every package below it (training, records,
configuration, the analysis, the report, the benchmarks) and nothing imports it but the package face
(`normbench.__main__`)."""
