"""mx.image (alias mx.img): image decoding, MXNet's augmenters and ImageIter (docs/io.md)."""
from .image import *  # noqa: F401,F403
from .image import __all__  # noqa: F401
