"""Ceilings over time (issue 32): the runs of a results folder grouped by
what makes them comparable (comparable), each ceiling's median and 95 %
interval per run from the model `rooftop model` uses (series), the rule
that says whether a ceiling changed beyond noise and which bound moved
(check), named baselines in the results database (baselines), JUnit XML
for CI systems (junit), the history figure (figure), the report's
"since the last comparable run" section (report), what `rooftop check`
does with a run (gate: what it is compared with, the rule per metric),
ReFrame references written from a baseline (references) and the config
keys of `check` and `history` (keys). docs/history.md says the rule and
its keys."""
