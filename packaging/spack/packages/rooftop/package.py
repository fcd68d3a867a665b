# rooftop's Spack recipe. Its dependencies and versions are those of
# pyproject.toml and engine/CMakeLists.txt (tests/release/test_spack_recipe.py
# checks that they agree). Use it from a checkout (docs/install.md):
#   spack repo add packaging/spack
#   spack dev-build rooftop@0.1.0 +learn        # in the checkout
# or `spack develop` in an environment.

from spack.package import *


class Rooftop(PythonPackage):
    """Empirical rooflines for distributed data services on HPC systems:
    per-process client and server ceilings of RPCs and bulk transfers,
    measured with a native engine over libfabric, and the roofline over the
    server/client ratio."""

    # No release archive is published yet: versions are built from a
    # checkout (spack dev-build / spack develop). A published sdist adds
    # `url` and each version's sha256 here.
    version("0.1.0")

    license("BSD-3-Clause")

    variant("learn", default=False, description="rooftop learn, predict and tune (scikit-learn)")
    variant("reframe", default=False, description="the ReFrame check (rooftop-reframe-check)")

    # The build: scikit-build-core drives CMake, which builds the engine
    # against libfabric and hwloc found through pkg-config.
    depends_on("python@3.10:", type=("build", "run"))
    depends_on("py-scikit-build-core@0.10:", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("ninja", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("cxx", type="build")

    # The engine links these.
    depends_on("libfabric@1.9:", type=("build", "link", "run"))
    depends_on("hwloc@2.0:", type=("build", "link", "run"))

    # pyproject.toml's dependencies.
    depends_on("py-rich@12:", type=("build", "run"))
    depends_on("py-numpy@1.22:", type=("build", "run"))
    depends_on("py-matplotlib@3.5:", type=("build", "run"))
    depends_on("py-jinja2@3.0:", type=("build", "run"))
    depends_on("py-tomli@1.1:", type=("build", "run"), when="^python@:3.10")

    # Its extras, as variants.
    depends_on("py-scikit-learn@1.2:", type=("build", "run"), when="+learn")
    depends_on("reframe@4.5:", type=("build", "run"), when="+reframe")
