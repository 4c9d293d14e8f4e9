"""The committed wire code is exactly what `make proto` generates from proto/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "shared" / "wire" / "v1"
SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def test_generated_code_matches_the_proto_files(tmp_path: Path) -> None:
    protos = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "proto").rglob("*.proto"))
    assert protos, "no .proto files found"
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    subprocess.run(
        [
            sys.executable, "-m", "grpc_tools.protoc", "-Ideniable/shared/wire=proto/deniable",
            f"--python_out={tmp_path}", f"--grpc_python_out={tmp_path}",
            f"--mypy_out={tmp_path}", f"--mypy_grpc_out={tmp_path}", *protos,
        ],
        cwd=ROOT, env=env, check=True, capture_output=True,
    )  # fmt: skip
    fresh = tmp_path / "deniable" / "shared" / "wire" / "v1"
    expected = sorted(p.name for p in fresh.iterdir())
    committed = sorted(p.name for p in GENERATED.iterdir() if p.name.endswith(SUFFIXES))
    assert committed == expected, "run `make proto` and commit the result"
    for name in expected:
        assert (GENERATED / name).read_bytes() == (fresh / name).read_bytes(), (
            f"{name} is stale: run `make proto` and commit the result"
        )


def test_generated_imports_resolve_without_rewriting() -> None:
    from deniable.shared.wire.v1 import aggregator_pb2, aggregator_pb2_grpc

    assert aggregator_pb2.DESCRIPTOR.package == "deniable.v1"
    assert "Aggregator" in aggregator_pb2.DESCRIPTOR.services_by_name
    assert hasattr(aggregator_pb2_grpc, "AggregatorServicer")
