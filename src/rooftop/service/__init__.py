"""A real data service on the roofline: a service spec (how to start its
servers and clients and read their rates), its points measured over the
same placements as the engine's validation grid or imported from a file,
each point's efficiency against the roofline, and how many servers to run.

points: what a measured or imported point is and where it is stored.
"""
