"""Results store: SQLite, one database per results folder.

runs         one campaign: its resolved config, environment, status, timing
samples      one measurement: stage, metric, which nodes and how many
             processes, the aggregate and per-process rates, the engine's
             errors, and the folder holding every engine document of that
             sample (raw_dir, relative to the results folder: see paths)
quantities   every measured quantity of a sample in long format:
             (sample_id, quantity, value, unit), one row per quantity the
             sample has (QUANTITIES below names them, with their units)
run_params   every resolved parameter of a run: (run_id, key, value), the
             run's config flattened to dotted keys ("bw.size",
             "engine.min_overlap", "nodes.3.host")
sample_params (a view) every parameter of a sample: (sample_id, key, value),
             its run's run_params plus its own placement ("sample.stage",
             "sample.metric", "sample.server_nodes", "sample.client_nodes",
             "sample.server_procs", "sample.client_procs", "sample.x")

Each sample is committed the moment it is measured, so an interrupted
campaign loses nothing it finished. Its quantities are committed with it.

Parameters are stored per run, and a view joins them to each sample: every
sample of a run shares one resolved config, so a 100k-sample run stores its
~60-100 keys once (not 100k copies) and the placement, which differs per
sample, is read from the sample's own columns. Learned models and exports
read `SELECT key, value FROM sample_params WHERE sample_id = ?` (or the
whole view) without parsing JSON. Values keep their type (numbers are
numbers); a list of plain values is stored as its JSON text ("metrics":
'["rpc", "bw"]'), a list of objects by index ("nodes.0.host").

Quantities are written for every sample that was measured (status ok or
invalid); a failed sample measured nothing and has none, and foreign_cpu
has a row only where it was measured. The rate quantities take the
sample's own `unit` column (each metric's unit, rooftop/metrics);
the others have the fixed unit QUANTITIES gives. Samples stored before a
column existed carry its default there (late_s 0, overlap 1, ...), and so
in quantities too.

Schema versions: the database's `PRAGMA user_version` is the number of the
last migration applied (MIGRATIONS below; 0: a database written before
migrations were numbered, which may hold any columns of its time, so every
migration checks before it adds). Opening a database applies the missing
migrations in one transaction taken with BEGIN IMMEDIATE, so of two
campaigns opening an old database at once one migrates and the other then
finds it done; a database newer than this code knows is refused with its
version. A new migration goes at the end of MIGRATIONS and never changes an
earlier one.

The modules: schema (the tables and their numbered migrations), records (Run
and helpers on rows), connection (opening, waiting, errors), runs, samples and
studies (the tables' operations), paths (stored paths relative to the results
folder, so a folder can be moved or copied), damage (rows whose stored rate
is not one, met where rows are read), db (Store, all of them).
`rooftop doctor`, which checks and repairs a results folder, is rooftop.doctor:
it replans runs and reads studies' documents, so it sits above the campaign.
"""
