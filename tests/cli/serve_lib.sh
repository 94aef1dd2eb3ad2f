# Sourced by the command-line tests that run a live `rtb serve` (needs RTB, SRC and T set), on
# top of scripts/serve_lib.sh:
#   PORT                          a free local port
#   bidder_config OUT [SED...]    configs/bidder/default.yaml on PORT, state and spill under T,
#                                 with the extra sed expressions applied
#   start_serve CONFIG            starts `rtb serve` (pid in SERVE, log in T/serve.log), waits
#                                 until it answers, and sets BROKERS to its embedded Kafka
#   fail MESSAGE                  says FAIL: MESSAGE and the serve log's last lines; exit 1
source "$SRC/scripts/serve_lib.sh"
PORT=$(free_port)
SERVE=
bidder_config() {
  local out=$1; shift
  local_bidder_config "$SRC/configs/bidder/default.yaml" "$out" "$PORT" "$T" "$@"
}
fail() { echo "FAIL: $*"; [[ -f $T/serve.log ]] && tail -20 "$T/serve.log"; exit 1; }
start_serve() {
  serve_start "$1" "$PORT" "$T/serve.log" ||
    { echo "no embedded Kafka address in the serve log"; cat "$T/serve.log"; exit 1; }
}
