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
"""


class LearnError(ValueError):
    """Data or a model file that cannot be learned from or used; the
    message says why and what to do."""
