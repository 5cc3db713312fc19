"""mx.io: data descriptions, batches and iterators (MXNet 1.x's DataDesc, DataBatch, DataIter,
NDArrayIter) and ImageRecordIter."""
from .io import DataBatch, DataDesc, DataIter, NDArrayIter  # noqa: F401
from .image_record import ImageRecordIter  # noqa: F401

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ImageRecordIter"]
