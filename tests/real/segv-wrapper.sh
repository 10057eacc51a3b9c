#!/bin/sh
# segv-wrapper.sh ARGS...: exec the real llama-server ($MX_REAL_SERVER) with
# ARGS. With MX_REAL_SEGV_AFTER=N a watcher sends the server SIGSEGV once its
# /metrics counts N predicted tokens (llamacpp:tokens_predicted_total, from
# --metrics; the port from --port): the real server dies by a signal in the
# middle of a level, as a server that segfaults does. exec keeps the pid, so
# the watcher's $$ is the server's pid.
: "${MX_REAL_SERVER:?MX_REAL_SERVER is not set}"
if [ -n "${MX_REAL_SEGV_AFTER:-}" ]; then
        port=""
        prev=""
        for a in "$@"; do
                [ "$prev" = "--port" ] && port=$a
                prev=$a
        done
        ulimit -c 0
        (
                while kill -0 $$ 2>/dev/null; do
                        sleep 0.1
                        n=$(curl -sf "http://127.0.0.1:$port/metrics" |
                                awk '/^llamacpp:tokens_predicted_total / { print int($2) }')
                        if [ "${n:-0}" -ge "$MX_REAL_SEGV_AFTER" ]; then
                                echo "segv-wrapper: $n tokens predicted: signal SEGV to the server (pid $$)" >&2
                                kill -SEGV $$
                                exit 0
                        fi
                done
        ) </dev/null >/dev/null &
fi
exec "$MX_REAL_SERVER" "$@"
