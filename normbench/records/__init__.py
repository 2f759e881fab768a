"""The run record and its metrics: `record` reads and writes a run's files (summary.json, the
per-step rows), `reading` finds the records in folders and reads their curves (the report's and the
analysis's only input), `metrics` is the table of record metrics, `values` how a recorded value is written as text, `convergence` the step-to-target
measure they use, `published` the curves a report writes beside runs.csv and reads back (so its gates can be
recomputed without the records), `sweep_time` the timestamps each job of a sweep writes beside its record and the
sweep's efficiency from them, and `study_plan` the plan file a sequential study writes beside its records
(the study runner's format, read by the report), and `folders` whose files an output folder holds. This package may import the configuration modules below it (`normbench.configuration.schema`,
`normbench.configuration.contract`, `normbench.checks`) and nothing above: training, studies, the analysis and
the report import it, never the reverse."""
