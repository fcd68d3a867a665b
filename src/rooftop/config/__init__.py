"""Campaign configuration: one file in (JSON or TOML) plus command-line
overrides, one fully resolved config out -- every default filled in, the
nodes the launcher found, the validation grid -- stored with the results.

Every key is declared once in KEYS (type, default, meaning): the common
ones here, each metric's in its own file (rooftop.metrics); unknown keys,
wrong types and impossible values are errors that name the key.

The package: keys (Key and ConfigError: a key's declaration, imported by
every file that declares keys), units (rates and sizes: scales, text,
parsing), catalog (KEYS: the common keys, each metric's and sampler's),
files (values checked, config files, overrides), resolve (resolve, build).
This file imports nothing, so that keys and units stay the bottom layers.
"""
