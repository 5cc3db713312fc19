"""python3 -m nanomx.tools.im2rec: MXNet's im2rec.py options, run by nanomx's C++ im2rec
(docs/io.md, "im2rec"): `--list prefix root` makes .lst files, `prefix root` packs them into
.rec/.idx with a pool of threads (--num-thread), in list order."""
import sys

from ..base import _LIB


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    return _LIB.im2rec(["im2rec"] + [str(a) for a in argv])


if __name__ == "__main__":
    sys.exit(main())
