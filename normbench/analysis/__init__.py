"""The statistics: what the records say, apart from how it is shown.

Aggregation of runs into groups, intervals, the ranking and the best set, paired-timing statistics,
performance profiles, tuning selection, the sequential design and the claims engine; result.py
gathers what they decide about a set of records into one StudyResult, built once, which the report
renders (it imports nothing else from here), and the sweep's last lines and the study runner's
"decided" read. The study runner, tune, compare, bench arms and the report take every statistic from here.

It may import normbench.records (the record, its reader and its metrics), normbench.configuration.contract
(what a record is) and normbench.configuration.study_info (a sweep file's purpose), and nothing from
normbench.report: the report shows what this package computes. Like the report it is torch-free, so
it runs wherever the records can be copied to.
"""
