"""A real data service on the roofline: a service spec (how to start its
servers and clients and read their rates), its points measured over the
same placements as the engine's validation grid or imported from a file,
each point's efficiency against the roofline, and how many servers to run.

points: what a measured or imported point is and where it is stored.

The modules: spec (a service spec), presets (the specs that ship with
rooftop), run (measuring a service over a run's validation grid), barrier
(the wrapper every service process runs under), ready (waiting for its
servers), rates (a client's rate from what it left), importing (points
measured elsewhere, from a CSV file), efficiency (against the roofline),
answer (a service's one answer), report (the services wherever a run is
shown), sizing (`rooftop size`: how many servers) and recover (points read
again from what `rooftop service` left).
"""
