"""mx.io: data descriptions, batches and iterators (MXNet 1.x's DataDesc, DataBatch, DataIter,
NDArrayIter)."""
from .io import DataBatch, DataDesc, DataIter, NDArrayIter  # noqa: F401

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter"]
