"""rooftop: empirical rooflines for distributed data services.

How fast can a data service go on this machine, and how far is it from
that? rooftop measures per-process client and server ceilings with its
native engine (``rooftop-engine``, C++ over libfabric) and models the
roofline over the server/client ratio.
"""

__version__ = "0.1.0"
