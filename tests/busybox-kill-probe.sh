#!/bin/bash
# Proves the kill probe of the manifests that trap SIGTERM and keep running (sigterm-ignored,
# delete-grace-override) on given busybox binaries: the tick goes on through SIGTERM until
# SIGKILL. Usage: tests/busybox-kill-probe.sh BUSYBOX... (e.g. Debian's busybox-static 1.37
# and 1.38, Ubuntu's 1.36; none is fetched by this script). As a container runtime does, TERM
# goes to the script's shell only and KILL to its whole process group (the PID namespace).
# Exits 1 when a probe stalls: fewer ticks after TERM than ~half of those its 20 ms period
# allows in the time to KILL (a stall shows one tick, or a handful).
set -u
here=$(dirname "$0")/..
status=0
probe() { # manifest busybox
  script=$(mktemp -d)/probe.sh
  # The container's script: the block under `args: - |`, unindented; /tmp/tick made private.
  awk '/^    - \|$/{on=1; next} on{sub(/^      /, ""); print}' "$1" |
    sed "s#/tmp/tick#$(dirname "$script")/tick#g" > "$script"
  out=$(dirname "$script")/out
  setsid "$2" sh "$script" > "$out" 2>&1 &
  pid=$!
  sleep 1; kill -TERM "$pid"; sleep 2; kill -s KILL -- "-$pid"; wait "$pid" 2>/dev/null
  after=$(awk '/^TERM received/{t=1; next} t && /^tick /{n++} END{print n+0}' "$out")
  term=$(grep -c '^TERM received' "$out")
  version=$("$2" 2>&1 | head -1 | cut -d' ' -f2)
  if [ "$term" -ge 1 ] && [ "$after" -ge 40 ]; then verdict=ok; else verdict=STALLED; status=1; fi
  echo "$verdict: busybox $version $(basename "$1"): $after ticks between TERM and KILL (2 s, 20 ms loop)"
  rm -rf "$(dirname "$script")"
}
for bb in "$@"; do
  for m in "$here/manifests/sigterm-ignored.yaml" "$here/manifests/delete-grace-override.yaml"; do
    probe "$m" "$bb"
  done
done
exit $status
