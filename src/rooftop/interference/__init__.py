"""`rooftop interfere`: the roofline under the load a machine really
carries. `run` (conditions, impact factors, slowdowns), `command` (its
parser and driver), `bursts` (a bursts run as the service), `report` (the
roofline under load: the report's section and figure), `keys` (its config
keys, section `interference`) and `loads/` (the background loads, one file
each). Docs: docs/interference.md.
"""
