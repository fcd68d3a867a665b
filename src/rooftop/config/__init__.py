"""Campaign configuration: one file in (JSON or TOML) plus command-line
overrides, one fully resolved config out -- every default filled in, the
nodes the launcher found, the validation grid -- stored with the results.

Every key is declared once in KEYS (type, default, meaning): the common
ones here, each metric's in its own file (rooftop.metrics); unknown keys,
wrong types and impossible values are errors that name the key.

The package: catalog (KEYS: the common keys, each metric's and meter's),
files (values checked, config files, overrides, a key read and set by its
dotted path: get_key, set_key, and a stored run's config brought up to date
once as it is loaded: up_to_date), resolve (resolve, build),
trust (a stored run's values naming what would run: used again only from a
folder of the user's own, or given again), resources (what a campaign's
processes need of the machine, checked before any is forked).
A key's declaration (Key, ConfigError) is rooftop.keys and rates and sizes
rooftop.units, outside this package: the files that declare keys (metrics,
stages, NIC policies, topology) import them without importing config.
"""
