# Sourced by the command-line tests that run a live `rtb serve` (needs RTB, SRC and T set):
#   PORT                          a free local port
#   bidder_config OUT [SED...]    configs/bidder/default.yaml on PORT, state and spill under T,
#                                 with the extra sed expressions applied
#   start_serve CONFIG            starts `rtb serve` (pid in SERVE, log in T/serve.log), waits
#                                 until it answers, and sets BROKERS to its embedded Kafka
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SERVE=
bidder_config() {
  local out=$1; shift
  sed -e "s#^listen: .*#listen: 127.0.0.1:$PORT#" \
      -e "s#^notice_base_url: .*#notice_base_url: http://127.0.0.1:$PORT#" \
      -e "s#^state_path: .*#state_path: $T/state#" \
      -e "s#^  spill_path: .*#  spill_path: $T/spill.jsonl#" \
      "$@" "$SRC/configs/bidder/default.yaml" > "$out"
}
start_serve() {
  "$RTB" serve --config "$1" 2> "$T/serve.log" &
  SERVE=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$PORT/metrics" >/dev/null 2>&1 && break
    sleep 0.1
  done
  BROKERS=$(sed -nE 's/.*embedded Kafka \(mock cluster, [0-9]+ brokers\) at ([^ ]+).*/\1/p' "$T/serve.log" | head -1)
  [[ -n $BROKERS ]] || { echo "no embedded Kafka address in the serve log"; cat "$T/serve.log"; exit 1; }
}
