"""The results store (rooftop.store): one SQLite database per results folder,
its tables gathered from the modules beside this one."""

from __future__ import annotations

from rooftop.store.runs import RunTables
from rooftop.store.studies import StudyTables


class Store(RunTables, StudyTables):
    """create: make the folder and database if missing (collect); else a
    missing store is a StoreError and nothing is created."""
