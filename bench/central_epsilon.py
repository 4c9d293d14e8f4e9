"""The central ε of a release step: a table over ε₀ and the step, at one δ (docs/privacy.md)."""

from __future__ import annotations

import argparse

from deniable.shared.privacy import shuffled_epsilon


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delta", type=float, default=1e-6, help="δ of every figure")
    parser.add_argument(
        "--local", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0], help="values of ε₀"
    )
    parser.add_argument(
        "--steps", type=int, nargs="+", default=[100, 1000, 10_000, 100_000], help="step sizes"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    print(f"central ε at δ = {args.delta:g} (Feldman, McMillan and Talwar 2021, numerical)")
    print("| ε₀ | " + " | ".join(f"m = {m:,}" for m in args.steps) + " |")
    print("|---|" + "---|" * len(args.steps))
    for local in args.local:
        row = [f"{shuffled_epsilon(local, m, args.delta):.4f}" for m in args.steps]
        print(f"| {local:g} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
