#!/usr/bin/env bash
# python-shim.sh: the PYTHON for /work/shared/tools/tck-run.sh (or any run of the A2A
# conformance suite on Debian 12's python3) when the gRPC binding is tested.
# It fixes two things in the environment, not in the suite (docs/CONFORMANCE.md):
#   1. google.rpc.ErrorInfo: Debian's libgoogle-common-protos-java (1.16.0) has an
#      error_details.proto from before ErrorInfo; a google/rpc/error_details_pb2.py
#      is generated here from the descriptor in the genproto module askpoint builds
#      with (tools/tck/errdetails), and put first on the path.
#   2. One set of a2a_pb2 classes (sitecustomize.py).
# Usage: PYTHON=$PWD/tools/tck/python-shim.sh TCK_DIR=... ASKPOINT_BIN=... bash tck-run.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=$(dpkg -L python3-minimal | grep -E '/bin/python3$' | head -1)
gen="${TMPDIR:-/tmp}/askpoint-tck-pyfix"
if [ ! -f "$gen/google/rpc/error_details_pb2.py" ]; then
  mkdir -p "$gen"
  (cd "$here/../.." && go run ./tools/tck/errdetails "$gen/errdetails.pb")
  protoc --descriptor_set_in="$gen/errdetails.pb" --python_out="$gen" google/rpc/error_details.proto
fi
export PYTHONPATH="$here:$gen${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" "$@"
