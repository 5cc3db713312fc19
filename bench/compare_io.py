#!/usr/bin/env python3
"""The image pipeline beside a PIL pipeline doing the same work on the same JPEGs, measured in
one run (README's data input table).

    PYTHONPATH=python /usr/bin/python3 bench/compare_io.py [--quick] [--json FILE]

Rows:
- ImageIter images per second: batch 32 at 3x224x224 with rand_crop, rand_resize, rand_mirror
  (the guide's example) over the JPEGs of scripts/make-sample-rec, the C++ pipeline on as many
  threads as the machine has cores; beside a one-thread PIL pipeline (Debian's python3-pil, for
  this benchmark only) doing the same work on the same records: decode to RGB, random sized crop,
  bicubic resize to 224x224, random flip, float32 CHW batch.
- im2rec images per second (decode and re-encode at quality 95, pack, write .rec/.idx) beside the
  same packing done with PIL and mx.recordio, and the CPU time per image of both.
- ImageIter's CPU time per image (every thread of the process) beside PIL's: the efficiency of
  the work itself, which other load on a shared machine does not distort as it does wall time.
- the cost of profiling the pipeline: CPU time per image with profile_all on, beside the same
  runs with the profiler off (interleaved).
Each figure is the best of several repetitions (a shared 2-core VM is noisy).
"""
import argparse
import importlib.machinery
import importlib.util
import io as pyio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from timing import best_of, cpu_seconds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
THREADS = os.cpu_count() or 1
os.environ.setdefault("NANOMX_CPU_WORKER_NTHREADS", str(THREADS))
import nanomx as mx  # noqa: E402
from nanomx import recordio  # noqa: E402

try:
    from PIL import Image
except ImportError:  # the benchmark runs without PIL, with n/a in its columns
    Image = None


def load_sample_maker():
    path = os.path.join(ROOT, "scripts", "make-sample-rec")
    loader = importlib.machinery.SourceFileLoader("make_sample_rec", path)
    spec = importlib.util.spec_from_loader("make_sample_rec", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def best_cpu_of(fn, repeats):
    """The least CPU time (all threads) of a run: robust to other load on the machine."""
    return best_of(fn, repeats, clock=cpu_seconds)


def nanomx_epoch(rec, batch):
    it = mx.img.ImageIter(batch_size=batch, data_shape=(3, 224, 224), path_imgrec=rec,
                          rand_crop=True, rand_resize=True, rand_mirror=True,
                          last_batch_handle="discard")

    def run():
        it.reset()
        for b in it:
            b.data[0].wait_to_read()
    return run


def pil_epoch(rec, batch):
    """One thread: the same decode, crop, resize, flip and batching with PIL and numpy."""
    def random_sized_crop(w, h):
        area = w * h
        for _ in range(10):
            target = random.uniform(0.08, 1.0) * area
            ratio = np.exp(random.uniform(np.log(3 / 4), np.log(4 / 3)))
            nw, nh = int(round(np.sqrt(target * ratio))), int(round(np.sqrt(target / ratio)))
            if nw <= w and nh <= h:
                x0, y0 = random.randint(0, w - nw), random.randint(0, h - nh)
                return x0, y0, nw, nh
        s = min(w, h)
        return (w - s) // 2, (h - s) // 2, s, s

    def run():
        reader = recordio.MXRecordIO(rec, "r")
        data = np.zeros((batch, 3, 224, 224), np.float32)
        labels = np.zeros((batch,), np.float32)
        i = 0
        while True:
            s = reader.read()
            if s is None:
                break
            header, payload = recordio.unpack(s)
            img = Image.open(pyio.BytesIO(payload)).convert("RGB")
            x0, y0, w, h = random_sized_crop(*img.size)
            img = img.resize((224, 224), Image.BICUBIC, box=(x0, y0, x0 + w, y0 + h))
            a = np.asarray(img, dtype=np.float32)
            if random.random() < 0.5:
                a = a[:, ::-1]
            data[i] = a.transpose(2, 0, 1)
            labels[i] = header.label
            i += 1
            if i == batch:
                i = 0
        reader.close()
    return run


def im2rec_run(prefix, images):
    """In this process (the C API call python -m nanomx.tools.im2rec makes), so that the
    interpreter's start is not counted."""
    def run():
        from nanomx.tools import im2rec
        devnull = os.open(os.devnull, os.O_WRONLY)
        saved = os.dup(1)
        os.dup2(devnull, 1)
        try:
            code = im2rec.main(["--num-thread", str(THREADS), prefix, images])
        finally:
            os.dup2(saved, 1)
            os.close(devnull)
            os.close(saved)
        assert code == 0, "im2rec failed"
    return run


def pil_pack_run(lst, images, out):
    entries = [line.rstrip("\n").split("\t") for line in open(lst)]

    def run():
        writer = recordio.MXIndexedRecordIO(out + ".idx", out + ".rec", "w")
        for e in entries:
            img = Image.open(os.path.join(images, e[-1])).convert("RGB")
            buf = pyio.BytesIO()
            img.save(buf, format="JPEG", quality=95)
            header = recordio.IRHeader(0, float(e[1]), int(e[0]), 0)
            writer.write_idx(int(e[0]), recordio.pack(header, buf.getvalue()))
        writer.close()
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small set (a smoke run)")
    parser.add_argument("--json", help="also write the rows to this file (bench/run_benchmarks.py)")
    args = parser.parse_args()
    count = 128 if args.quick else 640
    repeats = 2 if args.quick else 3
    batch = 32
    work = tempfile.mkdtemp(prefix="nanomx-bench-io-")
    try:
        images = os.path.join(work, "images")
        load_sample_maker().make_images(images, count)
        prefix = os.path.join(work, "test")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        subprocess.run([sys.executable, "-m", "nanomx.tools.im2rec", "--list", "--recursive",
                        prefix, images], check=True, env=env, stdout=subprocess.DEVNULL)
        im2rec = best_of(im2rec_run(prefix, images), repeats)
        cpu_im2rec = best_cpu_of(im2rec_run(prefix, images), repeats)
        pil_pack_fn = pil_pack_run(prefix + ".lst", images, os.path.join(work, "pil"))
        pil_pack = best_of(pil_pack_fn, repeats) if Image else None
        cpu_pil_pack = best_cpu_of(pil_pack_fn, repeats) if Image else None
        rec = prefix + ".rec"
        nano_iter = nanomx_epoch(rec, batch)
        nano_iter()  # warm up (page cache, allocator)
        t_nano = best_of(nano_iter, repeats)
        t_pil = best_of(pil_epoch(rec, batch), repeats) if Image else None
        cpu_nano = best_cpu_of(nano_iter, repeats)
        cpu_pil = best_cpu_of(pil_epoch(rec, batch), repeats) if Image else None
        n_used = count // batch * batch
        # Profiling cost: interleaved off/on runs of the same iterator, in CPU time (wall time
        # on a shared machine varies by more than the cost measured).
        off, on = float("inf"), float("inf")
        for r in range(2 * repeats + 1):
            off = min(off, best_cpu_of(nano_iter, 1))
            mx.profiler.set_config(profile_all=True, filename=os.path.join(work, "p%d.json" % r))
            mx.profiler.set_state("run")
            on = min(on, best_cpu_of(nano_iter, 1))
            mx.profiler.set_state("stop")
            mx.profiler.dump(True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def rate(t, n):
        return None if t is None else n / t
    rows = [
        {"area": "Data input", "what": "ImageIter, batch 32 at 224², rand_crop + rand_resize + "
         "rand_mirror (%d threads)" % THREADS, "unit": "img/s",
         "nanomx": rate(t_nano, n_used), "reference": rate(t_pil, count),
         "reference_kind": "peer", "reference_label": "PIL, one thread", "better": "higher",
         "target": "≥ 3× PIL"},
        {"area": "Data input", "what": "ImageIter CPU time per image (all threads), same work",
         "unit": "ms", "nanomx": cpu_nano * 1e3 / n_used,
         "reference": None if cpu_pil is None else cpu_pil * 1e3 / count,
         "reference_kind": "peer", "reference_label": "PIL, one thread", "better": "lower",
         "target": "≤ 1× PIL"},
        {"area": "Data input", "what": "im2rec packing (decode + JPEG q95 + .rec/.idx, %d threads)"
         % THREADS, "unit": "img/s", "nanomx": rate(im2rec, count),
         "reference": rate(pil_pack, count), "reference_kind": "peer",
         "reference_label": "PIL + mx.recordio, one thread", "better": "higher",
         "target": "≥ 1× PIL"},
        {"area": "Data input", "what": "im2rec CPU time per image (all threads), same work",
         "unit": "ms", "nanomx": cpu_im2rec * 1e3 / count,
         "reference": None if cpu_pil_pack is None else cpu_pil_pack * 1e3 / count,
         "reference_kind": "peer", "reference_label": "PIL + mx.recordio, one thread",
         "better": "lower", "target": "≤ 1× PIL"},
        {"area": "Data input", "what": "ImageIter CPU time per image with profile_all on (vs off)",
         "unit": "ms", "nanomx": on * 1e3 / n_used, "reference": off * 1e3 / n_used,
         "reference_kind": "floor", "reference_label": "profiler off", "better": "lower",
         "target": "≤ 1.02× (≤ 2 % cost)"},
    ]
    print("| measure | nanomx | peer / floor | ratio |")
    print("|---|---|---|---|")
    for row in rows:
        n, ref = row["nanomx"], row["reference"]
        print("| %s | %.4g %s | %s | %s |" % (
            row["what"], n, row["unit"],
            "n/a" if ref is None else "%.4g %s (%s)" % (ref, row["unit"], row["reference_label"]),
            "n/a" if ref is None else "%.2f×" % (n / ref)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f)


if __name__ == "__main__":
    main()
