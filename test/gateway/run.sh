#!/usr/bin/env bash
# test/gateway/run.sh: the gateway's tests, which are the TAP test
# test/t/010_gateway.pl (its header lists the steps): a shortcut that runs it
# alone.  The extension must be installed in $PGBIN's tree (tools/lib.sh
# ts_build_install).  GW_ONLY=TEXT runs only the steps whose name holds TEXT.
cd "$(dirname "$0")/../.." || exit 1
exec bash tools/run-tap.sh test/t/010_gateway.pl
