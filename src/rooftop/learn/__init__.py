"""Learned performance models with the roofline as their prior (issue 17).

`rooftop learn RUN...` builds a dataset from the results store (dataset.py:
per sample, every resolved parameter that varies across the runs and the
sample's placement; the target is the per-client-process rate of one
metric), compares scikit-learn regressors (zoo.py) with two
roofline-informed models (roofline_models.py: the run's roofline alone, and
a learned efficiency measured / roofline(x) multiplied back) by
cross-validation grouped by configuration, and by extrapolation to the
largest footprint (evaluate.py), then saves the best model with the run
(predict.py). `rooftop predict RUN --servers S --clients C` answers for a
footprint never measured, with an interval, capped by the roofline.

Beside them: show (what learn and predict print), modelfile (the model file:
plain JSON, never code), report_section (the report's learned-model section)
and keys (the `tune` config keys). `rooftop tune`, the adaptive loop: tune
(the loop), propose (what it measures next), space (its search space),
tune_run (the loop on the engine, a stored run) and tune_report (what it
prints, and its report).
"""


class LearnError(ValueError):
    """Data or a model file that cannot be learned from or used; the
    message says why and what to do."""


#: How to get scikit-learn, which only learn, predict and tune need (the
#: `learn` extra of pyproject.toml; a plain install has none).
INSTALL_HINT = "pip install 'rooftop[learn]'"


class MissingLearnExtra(LearnError):
    """scikit-learn is not installed: the message says how to install it."""


def require_sklearn() -> None:
    """Raises MissingLearnExtra (the CLI: exit 2) when scikit-learn cannot
    be imported; the learned models, the tune's proposals and a saved
    model's refit all need it."""
    try:
        import sklearn  # noqa: F401
    except ImportError as e:
        raise MissingLearnExtra(
            f"needs scikit-learn, which is not installed here ({e}); install the learn extra: "
            f"{INSTALL_HINT} (from a checkout: pip install '.[learn]', or bash scripts/setup.sh --learn)"
        ) from None
