#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then every long-running process run from it, from an
# empty folder, on the configs it installed, with the build and source trees gone: where the
# kernel lets it (root, or unprivileged user namespaces), install_run.sh runs in a mount
# namespace of its own where both trees are empty folders (tmpfs mounted over them), as if
# deleted; elsewhere it runs beside them and says so. install_run.sh checks:
#   - rtb --version names the version and the commit;
#   - rtb serve (its default config from <prefix>/share/rtb, the port from RTB_LISTEN) is ready;
#   - rtb learn (the installed learner config and rtb-learner) joins serve's embedded Kafka and
#     closes a step's worth of startup, exit 0; rtb budget coordinates, and stops on SIGTERM, exit 0;
#   - the systemd units name the prefix and pass `systemd-analyze verify`.
set -u
BUILD=$1
SRC=$2
T=$(mktemp -d)
# The processes are install_run.sh's (it stops them); this half only installs.
fail() { echo "FAIL: $*"; [[ -f $T/install.log ]] && tail -15 "$T/install.log"; exit 1; }
trap 'rm -rf "$T"' EXIT
P=$T/prefix
cmake --install "$BUILD" --prefix "$P" > "$T/install.log" 2>&1 || fail "cmake --install"
for f in bin/rtb bin/rtb-learner share/rtb/configs/bidder/default.yaml \
    share/rtb/configs/learner/default.yaml share/rtb/schemas/events-v1.md share/doc/rtb/LICENSE \
    share/rtb/deploy/rtb-serve.service share/rtb/deploy/prometheus/rtb-alerts.yml \
    share/rtb/deploy/prometheus/prometheus.yml share/rtb/deploy/grafana/rtb-dashboard.json; do
  [[ -e $P/$f ]] || fail "not installed: $f"
done
# The rest runs from $T alone: the library of helpers is copied there.
cp "$SRC/scripts/serve_lib.sh" "$SRC/tests/cli/install_run.sh" "$T/" || fail "copy"
BUILD_ABS=$(cd "$BUILD" && pwd) SRC_ABS=$(cd "$SRC" && pwd)
# The namespace is usable when a tmpfs can be mounted in it (not only when unshare runs).
mkdir -p "$T/probe"
can_hide() { "$@" sh -c 'mount -t tmpfs none "$1"' _ "$T/probe" 2> /dev/null; }
U=(unshare -m)
can_hide "${U[@]}" || U=(unshare -m --map-root-user)
if can_hide "${U[@]}"; then
  "${U[@]}" bash -c 'mount -t tmpfs none "$1" && mount -t tmpfs none "$2" && exec bash "$3/install_run.sh" "$3" "$1" "$2" hidden' \
    _ "$BUILD_ABS" "$SRC_ABS" "$T" || exit 1
else
  echo "install: unshare is not permitted here: the installed processes run beside the build tree"
  bash "$T/install_run.sh" "$T" "$BUILD_ABS" "$SRC_ABS" visible || exit 1
fi
