"""The learned model file (RESULTS/RUN/learned/METRIC.model.json): plain
JSON, nothing that loading it can execute.

Results folders are shared and read by root; a model file is data, never
code. Until issue 27 the file was a joblib pickle, and unpickling a crafted
file runs whatever its author wrote. Now:

- Everything `rooftop predict` and `rooftop tune --model` need besides the
  estimator is plain JSON: the metric, unit, features, the encoder's
  categories, the constants, runs, knobs, each training run's roofline
  (its ceilings' numbers), the interval, the measured ranges, the packing.
- The fitted estimator is not stored at all. The file names the model (a
  key of evaluate.all_models, a fixed table in this package), its seed and
  the training data (the design matrix X, the per-client rates y), with the
  fitted model's predictions on X. Loading refits that model on X, y (what
  `rooftop learn` did: `clone(model).fit(X, y)`) and refuses the file
  unless the refit reproduces the stored predictions.

Why a refit and not skops' safe loader: every model of the comparison
(zoo.py's pipelines of scaler and regressor; roofline_models.py's own
classes RooflineAlone and Efficiency; Gaussian processes with composite
kernels; SVR, k-nearest neighbours, forests and boosting with their tree
and loss objects) would need its internal types named in an allow-list,
and those internal types change between scikit-learn releases; skops
would also be one more dependency. A refit needs no type list: the only
code that runs is ours, chosen by name from a fixed table, fed numbers.
Every model is deterministic given its seed (forests run with n_jobs=1,
the Gaussian process without optimizer restarts), so the refit is the
model `learn` saved; the check against its stored predictions turns any
difference (another scikit-learn, another BLAS) into a clear refusal
saying how to re-learn, never a silently different model. The cost is one
fit per load, seconds at most on the datasets `learn` sees.

A file of the old format (`METRIC.joblib`, or any pickle) is never
opened as a pickle: it is refused with the command that re-learns it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from rooftop import __version__, files
from rooftop.keys import RENAMED
from rooftop.learn import LearnError
from rooftop.learn.dataset import Encoder
from rooftop.model.ceilings import Ceiling
from rooftop.model.roofline import Roofline

#: The model file's format; another one is refused (re-learn).
FORMAT = 2
#: What tells a rooftop model file from other JSON (its "content").
CONTENT = "rooftop learned model"
#: The model file's name: METRIC + SUFFIX (beside METRIC.json, the comparison).
SUFFIX = ".model.json"
#: Names of model files of older rooftops (pickles), refused.
OLD_SUFFIXES = (".joblib", ".pkl", ".pickle")
#: The fields every model file has (besides encoder, rooflines, training).
REQUIRED = (
    "metric",
    "unit",
    "model",
    "features",
    "constants",
    "runs",
    "knobs",
    "interval",
    "ranges",
    "per_node",
    "cv_median_ape",
    "seed",
)
#: How close the refit's predictions must be to the stored ones (relative).
RTOL = 1e-6


def relearn_hint(run_id: str | None) -> str:
    return f"re-learn it: rooftop learn {run_id or 'RUN'} (the runs it was learned from)"


def metric_of(path: Path) -> str:
    """The metric a model file's name says (rpc.model.json: rpc)."""
    name = path.name
    return name[: -len(SUFFIX)] if name.endswith(SUFFIX) else path.stem


# Rooflines and the encoder as JSON ---------------------------------------------------------


def _ceiling_json(c) -> dict | None:
    if c is None:
        return None
    return {
        "lo": c.lo,
        "hi": c.hi,
        "centre": c.centre,
        "ci": None if c.ci is None else list(c.ci),
        "n": c.n,
        "keys": sorted(str(k) for k in c.keys),
    }


def _ceiling_of(d):
    if d is None:
        return None
    ci = d.get("ci")
    return Ceiling(
        float(d["lo"]),
        float(d["hi"]),
        float(d["centre"]),
        None if ci is None else (float(ci[0]), float(ci[1])),
        int(d.get("n", 0)),
        frozenset(str(k) for k in d.get("keys", ())),
    )


def roofline_json(r) -> dict:
    """A rooftop.model.Roofline as JSON: every field, ceilings as numbers."""
    out = {}
    for f in dataclasses.fields(r):
        v = getattr(r, f.name)
        out[f.name] = _ceiling_json(v) if isinstance(v, Ceiling) else v
    return out


def roofline_of(d: dict):
    """roofline_json's inverse (fields this rooftop does not know are ignored)."""
    if not isinstance(d, dict):
        raise TypeError("a roofline is an object")
    known = {f.name for f in dataclasses.fields(Roofline)}
    kw = {k: v for k, v in d.items() if k in known}
    for side in ("client", "server", "client_node"):
        if side in kw:
            kw[side] = _ceiling_of(kw[side])
    if "core_shared" in kw:
        kw["core_shared"] = [tuple(x) for x in kw["core_shared"]]
    if "derived" in kw:
        kw["derived"] = tuple(kw["derived"])
    return Roofline(**kw)


def encoder_json(e) -> dict:
    return {"features": list(e.features), "categories": {k: list(v) for k, v in e.categories.items()}}


def encoder_of(d: dict):
    return Encoder([str(f) for f in d["features"]], {str(k): [str(c) for c in v] for k, v in d["categories"].items()})


# Writing and reading -------------------------------------------------------------------------


def save_model(path: Path, doc: dict, X: np.ndarray, y: np.ndarray, predictions: np.ndarray) -> None:
    """Writes the model file atomically (a temporary file renamed over it).
    doc: the plain fields (encoder and rooflines as objects); X, y: the
    training data; predictions: the fitted model's on X."""
    import sklearn  # noqa: PLC0415 (scikit-learn, the optional learn extra: loaded by a save, not with the module)

    body = dict(doc)
    body.pop("estimator", None)
    body["encoder"] = encoder_json(doc["encoder"])
    body["rooflines"] = {run: roofline_json(r) for run, r in doc["rooflines"].items()}
    out = {
        "format": FORMAT,
        "content": CONTENT,
        "rooftop": __version__,
        "sklearn": sklearn.__version__,
        "numpy": np.__version__,
        **body,
        "training": {
            "X": np.asarray(X, dtype=float).tolist(),
            "y": np.asarray(y, dtype=float).tolist(),
            "predictions": np.asarray(predictions, dtype=float).tolist(),
        },
    }
    files.write(path, json.dumps(out))  # whole or not at all, never through a link


def _looks_pickled(path: Path, head: bytes) -> bool:
    """A pickle (protocol 2 and later start with 0x80), a zlib-compressed
    joblib file, or a file named as an old model file."""
    return path.suffix in OLD_SUFFIXES or head[:1] in (b"\x80", b"\x78")


def load_model(path: Path, run_id: str | None = None) -> dict:
    """The model file's fields, with "encoder" (dataset.Encoder), "rooflines"
    (run -> rooftop.model.Roofline) and "estimator" (the model refitted on
    the stored training data and checked against its stored predictions).
    Never unpickles anything: a pickle is refused. run_id: named in the
    re-learn hint."""
    path = Path(path)
    if not path.is_file():
        raise LearnError(f"no model file {path}")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise LearnError(f"cannot read model file {path}: {e.strerror}") from None
    if _looks_pickled(path, data[:1]):
        raise LearnError(
            f"{path}: a model file of an older rooftop (a pickle); rooftop no longer loads "
            f"pickles, which can run code; {relearn_hint(run_id)}"
        )
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise LearnError(f"{path}: not a rooftop model file (not JSON); {relearn_hint(run_id)}") from None
    if not isinstance(doc, dict) or doc.get("content") != CONTENT:
        raise LearnError(f"{path}: not a rooftop model file; {relearn_hint(run_id)}")
    if doc.get("format") != FORMAT:
        raise LearnError(
            f"{path}: a rooftop model file of format {doc.get('format')!r}, this rooftop "
            f"reads format {FORMAT}; {relearn_hint(run_id)}"
        )
    try:
        _renamed_keys(doc)
        doc["encoder"] = encoder_of(doc["encoder"])
        doc["rooflines"] = {str(run): roofline_of(r) for run, r in doc["rooflines"].items()}
        missing = [k for k in REQUIRED if k not in doc]
        if missing:
            raise KeyError(", ".join(missing))
        doc["estimator"] = _refit(doc, path, run_id)
    except LearnError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise LearnError(
            f"{path}: a damaged rooftop model file ({type(e).__name__}: {e}); {relearn_hint(run_id)}"
        ) from None
    return doc


def _renamed_keys(doc: dict) -> None:
    """A model file written before the config keys' renames
    (rooftop.keys.RENAMED) names its parameters as the runs, migrated
    (store migration 15), now do: collect.samples -> collect.windows, ..."""

    def new(name):
        return RENAMED.get(name, name) if isinstance(name, str) else name

    for field in ("constants", "ranges"):
        if isinstance(doc.get(field), dict):
            doc[field] = {new(k): v for k, v in doc[field].items()}
    for holder in (doc, doc.get("encoder")):
        if isinstance(holder, dict) and isinstance(holder.get("features"), list):
            holder["features"] = [new(k) for k in holder["features"]]
    if isinstance(doc.get("knobs"), dict):
        doc["knobs"] = {
            r: {new(k): v for k, v in d.items()} if isinstance(d, dict) else d for r, d in doc["knobs"].items()
        }
    enc = doc.get("encoder")
    if isinstance(enc, dict) and isinstance(enc.get("categories"), dict):
        enc["categories"] = {new(k): v for k, v in enc["categories"].items()}


def _refit(doc: dict, path: Path, run_id: str | None):
    """The model the file names, fitted on its training data, if it
    reproduces the stored predictions."""
    # scikit-learn (the optional learn extra) loads here, for a refit, not
    # with the module.
    import sklearn  # noqa: PLC0415
    from sklearn.base import clone  # noqa: PLC0415

    from rooftop.learn.evaluate import all_models  # noqa: PLC0415

    seed = doc["seed"]
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise ValueError(f"seed {seed!r} is not an integer in 0..2^32-1")
    models = all_models(seed)
    if doc["model"] not in models:
        raise LearnError(
            f"{path}: model {doc['model']!r} is not one this rooftop compares "
            f"({', '.join(models)}); {relearn_hint(run_id)}"
        )
    t = doc["training"]
    X = np.asarray(t["X"], dtype=float)
    y = np.asarray(t["y"], dtype=float)
    pred = np.asarray(t["predictions"], dtype=float)
    width = len(doc["encoder"].columns()) + 1
    if X.ndim != 2 or len(X) < 1 or X.shape[1] != width or y.shape != (len(X),) or pred.shape != y.shape:
        raise ValueError(
            f"training data of shape X {X.shape}, y {y.shape}, predictions {pred.shape}; "
            f"the encoder makes {width} columns"
        )
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y)) and np.all(y > 0) and np.all(X[:, -1] > 0)):
        raise ValueError("training data that is not finite and positive")
    fitted = clone(models[doc["model"]][1]).fit(X, y)
    got = fitted.predict(X)
    if not np.allclose(got, pred, rtol=RTOL, atol=0.0):
        worst = float(np.max(np.abs(got - pred) / np.maximum(np.abs(pred), 1e-300)))
        raise LearnError(
            f"{path}: refitting {doc['model']} on its training data does not reproduce the "
            f"predictions it was saved with (up to {worst:.2g} apart; saved with scikit-learn "
            f"{doc.get('sklearn')}, this is {sklearn.__version__}); {relearn_hint(run_id)}"
        )
    return fitted
