"""The run record and its metrics: `record` reads and writes a run's files (summary.json, the
per-step rows), `metrics` is the registry of record metrics and `convergence` the step-to-target
measure they use. This package may import the configuration modules below it (`normbench.configuration.schema`,
`normbench.configuration.contract`, `normbench.checks`) and nothing above: training, studies, the analysis and
the report import it, never the reverse."""
