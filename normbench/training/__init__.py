"""One run: `run` (config → task → model → training → record), the training loop `train` (the
`Trainer`: the loop and its state, whose layout and checks are `state`'s) with what it computes in
(`precision`), the hooks it calls (`hooks`): the probes (`probes`), the record writer and the progress bar
(`recording`), the loggers (`loggers`, `mlflow_logger`, `wandb_logger`, named by `tracking`), the files a
run writes beside its record (`checkpoint`, `saved_model`, `logfile`); the record's sections read off the
trainer's state (`measures`), what the run ran on (`environment`, `machine`), and the commands that run a recorded run
again (`rerun`, `evaluate`). This package may import the packages below it (`normbench.configuration`,
`normbench.records`, `normbench.models`, `normbench.norms`, `normbench.tasks`) and nothing above, not
even the analysis: a run writes what it measured, and verdicts on it (did it train?) are the analysis's,
decided from the records whenever they are read. The analysis, the report, the benchmarks and the
studies import it or stand beside it, never the reverse; the loop stands on `hooks` alone, not on the
loggers' libraries."""
