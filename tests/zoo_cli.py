"""The zoo's command line (`python tests/zoo_cli.py`): list and write the
deterministic test models of `tests/zoo.py`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

import zoo

PROG = "python tests/zoo_cli.py"


class _Parser(argparse.ArgumentParser):
    """Usage errors exit with status 1, like every other user error."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Build the seeded ONNX test models of the TiGrIS-IR zoo "
        "(opset 13, float32 or int8 QDQ). Nothing is downloaded.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", help="one line per model: name, full input shape, description")

    build = sub.add_parser("build", help="write one model")
    build.add_argument("name", metavar="NAME", help="model name (see 'list')")
    build.add_argument("-o", "--output", required=True, help="output .onnx path")
    build.add_argument("--small", action="store_true", help="the small test instance")
    build.add_argument(
        "--int8", action="store_true", help="int8 QDQ via onnxruntime quantize_static"
    )
    build.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")

    build_all = sub.add_parser(
        "build-all", help="write NAME.onnx and NAME_int8.onnx for every model"
    )
    build_all.add_argument("--out", required=True, help="output directory")
    build_all.add_argument("--small", action="store_true", help="the small test instances")
    return parser


def _list() -> None:
    rows = [
        (name, "x".join(map(str, zoo.input_shape(zoo.build(name, size="full")))), s)
        for name, s in zoo.ZOO.items()
    ]
    name_w = max(len(r[0]) for r in rows)
    shape_w = max(len(r[1]) for r in rows)
    for name, shape, s in rows:
        print(f"{name:<{name_w}}  {shape:<{shape_w}}  {s.description}")


def run(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` and run; returns the exit status (user errors give 1)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            _list()
        elif args.command == "build":
            size: zoo.Size = "small" if args.small else "full"
            zoo.write(args.name, args.output, size=size, int8=args.int8, seed=args.seed)
        else:
            size = "small" if args.small else "full"
            os.makedirs(args.out, exist_ok=True)
            for name in zoo.ZOO:
                for int8, suffix in ((False, ""), (True, "_int8")):
                    path = os.path.join(args.out, f"{name}{suffix}.onnx")
                    zoo.write(name, path, size=size, int8=int8)
                    print(path)
    except (zoo.UnknownModelError, RuntimeError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    return 0


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
