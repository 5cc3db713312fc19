"""Command-line tools of the nanomx package (``python3 -m nanomx.tools.launch``)."""
