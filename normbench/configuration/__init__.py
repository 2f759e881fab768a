"""The settings and their checks: `schema` the typed dataclasses a run's config is made of (torch-free;
the library's `NormSpec`, `ModelShape` and `PlacementConfig` are among them), `config` Hydra's side of
them (registration, the typed `Config`, the sweeps folders and their search path), `contract` what a
setting means for a run's identity (inert keys, aliases, the group key), `hydra_files` the checks
on the files Hydra writes itself, and `launcher_settings` what each joblib launcher setting does (the values
it honours); `placements` one descriptor per placement (where a family's norms
sit: valid names, inert settings, the builders' slots), `families` one descriptor per model family
(display name, recurrent or not, its parameters, its hand-written recurrences, the placements it offers,
its builder: the one place a family is described), `validity` which (family, norm, placement) combinations
exist (read off those two), and `study_info` what study a run belongs to
(the swept keys of a multirun, its sweep file's purpose). This package may import the descriptors below it (`normbench.checks`,
`normbench.norms.kinds` and `spec`, `normbench.tasks`) and nothing above: the
records, training, studies, the analysis and the report import it, never the reverse."""
