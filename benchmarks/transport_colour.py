"""Colour transfer between the two scikit-learn sample images with a W_2 transport plan.

The colours of n pixels drawn from each image (RGB in [0, 1]^3, uniform masses) are matched by
``Transport(src, dst, p=2).solve(method)``; each drawn source colour moves to the barycentre of
the target colours the plan sends it to, and every pixel of the source image moves by the
displacement of its nearest drawn colour (the usual out-of-sample extension). Both directions
(china -> flower's colours, flower -> china's colours) come from the one plan (its transpose).
Draws docs/img/transport_colour.png: the two images before (left), after with the plan of
``--method`` (middle) and after with the plan of ``--compare`` (right; default the exact optimum).

    python benchmarks/transport_colour.py               # n = 5000 pixels per image, method approx
    python benchmarks/transport_colour.py --n 2000 --method exact --out /tmp/colour.png
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "docs" / "img" / "transport_colour.png"


def image_colours():
    """The two sample images as float arrays in [0, 1] (china.jpg, flower.jpg), each (h, w, 3)."""
    from sklearn.datasets import load_sample_images
    return [img.astype(np.float64) / 255.0 for img in load_sample_images().images]


def barycentric_maps(plan, src, dst):
    """Where the plan moves each drawn colour: (src -> dst barycentres, dst -> src barycentres)."""
    plan = plan.tocsr()
    forward = (plan @ dst) / np.asarray(plan.sum(axis=1))
    backward = (plan.T @ src) / np.asarray(plan.sum(axis=0)).reshape(-1, 1)
    return forward, backward


def recolour(image, drawn, moved):
    """Every pixel moves by the displacement of its nearest drawn colour; clipped to [0, 1]."""
    from scipy.spatial import cKDTree
    pixels = image.reshape(-1, 3)
    _, nearest = cKDTree(drawn).query(pixels)
    return np.clip(pixels + (moved - drawn)[nearest], 0.0, 1.0).reshape(image.shape)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="pixels drawn from each image")
    ap.add_argument("--method", default="approx")
    ap.add_argument("--compare", default="exact", help="a second method drawn beside it ('none': no column)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)

    from solvopt.dsl import Transport
    china, flower = image_colours()
    rng = np.random.default_rng(args.seed)
    src = china.reshape(-1, 3)[rng.choice(china.shape[0] * china.shape[1], args.n, replace=False)]
    dst = flower.reshape(-1, 3)[rng.choice(flower.shape[0] * flower.shape[1], args.n, replace=False)]
    columns = [("before", china, flower)]
    for method in [args.method] + ([] if args.compare == "none" else [args.compare]):
        t0 = time.perf_counter()
        result = Transport(src, dst, p=2).solve(method)
        seconds = time.perf_counter() - t0
        forward, backward = barycentric_maps(result.solution["plan"], src, dst)
        columns.append((f"{method}: W_2 = {result.objective:.4f}, {seconds:.1f} s",
                        recolour(china, src, forward), recolour(flower, dst, backward)))
        print(f"{method}: W_2 = {result.objective:.4f}, bound {result.bound:.4f}, {seconds:.2f} s; "
              f"{result.guarantee}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, len(columns), figsize=(4.2 * len(columns), 6.2), squeeze=False)
    for col, (title, top, bottom) in enumerate(columns):
        for row, img in enumerate((top, bottom)):
            axes[row][col].imshow(img)
            axes[row][col].axis("off")
        axes[0][col].set_title(title, fontsize=10)
    fig.suptitle(f"W_2 colour transfer between the scikit-learn sample images, {args.n} pixels drawn per image: "
                 "china.jpg in flower.jpg's colours (top), flower.jpg in china.jpg's colours (bottom)", fontsize=9)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=80)
    shrink_png(args.out)
    print(f"wrote {args.out}")


def shrink_png(path):
    """Rewrite a PNG with a 256-colour palette (a third of the size; photos make large PNGs)."""
    from PIL import Image
    with Image.open(path) as img:
        small = img.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(path, optimize=True)


if __name__ == "__main__":
    main()
