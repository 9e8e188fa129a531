#!/usr/bin/env bash
# Writes the FileDescriptorSet that gRPC server reflection serves (tickwork.descriptor-set.binpb),
# with protoc from the committed .proto files: every served service, the google.rpc error
# details, and their imports (the well-known types from protoc's own include directory).
# Run after changing any .proto here: `npm run proto:descriptors`. A test
# (test/integration/proto-descriptor-set.test.ts) fails when the committed set differs from this.
# Usage: descriptor-set.sh [OUTPUT] (default: tickwork.descriptor-set.binpb beside this script).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
OUT="$(realpath -m "${1:-$HERE/tickwork.descriptor-set.binpb}")"
command -v protoc >/dev/null || {
  echo "protoc not found: apt-get install protobuf-compiler libprotobuf-dev" >&2
  exit 1
}
cd "$HERE"
# Source info keeps the comments, so `grpcurl describe` shows them.
protoc --include_imports --include_source_info --descriptor_set_out="$OUT" -I. \
  tickwork/admin/v1/admin.proto \
  grpc/health/v1/health.proto \
  grpc/reflection/v1/reflection.proto \
  grpc/reflection/v1alpha/reflection.proto \
  google/rpc/status.proto \
  google/rpc/error_details.proto
