#!/bin/sh
# A fake `ssh` for the MIG hardware step's tests (VERIFY_SSH points at it). Each fake node is a
# directory, named by the config file given with `-F DIR/ssh_config` (MIG_NODE_SSH_OPTS), so
# tests never write an executable (a fork in another thread could hold it open: ETXTBSY). It
# emulates `nvidia-smi` on the cards listed in DIR/state ("<index>, <mode>" per line) and appends
# every remote command to DIR/log. Optional files in DIR:
#   unreachable   present: exit 255 as ssh does when it cannot connect
#   fail          a remote command that answers non-zero (exit 3)
#   stuck         a card index whose mode never changes (a toggle that does not converge)
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    -F) dir=$(dirname "$2"); shift 2 ;;
    -o | -i | -p | -J | -l) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
if [ -z "$dir" ]; then
  echo "fake ssh: give the fake node's directory with -F DIR/ssh_config" >&2
  exit 255
fi
dest="$1"
shift
cmd="$*"
echo "$cmd" >>"$dir/log"
if [ -e "$dir/unreachable" ]; then
  echo "ssh: connect to host ${dest#*@} port 22: Connection refused" >&2
  exit 255
fi
if [ -e "$dir/fail" ] && [ "$cmd" = "$(cat "$dir/fail")" ]; then
  echo "simulated failure of: $cmd" >&2
  exit 3
fi
case "$cmd" in
  "sudo -n nvidia-smi --query-gpu=index,mig.mode.current --format=csv,noheader")
    cat "$dir/state"
    ;;
  "sudo -n nvidia-smi -i "*" -mig "[01])
    idx=$(echo "$cmd" | cut -d' ' -f5)
    val=$(echo "$cmd" | cut -d' ' -f7)
    line=$(grep "^$idx, " "$dir/state")
    case "$line" in
      "") echo "No devices were found" >&2; exit 6 ;;
      *"[N/A]") echo "Unable to enable MIG Mode for GPU $idx: Not Supported" >&2; exit 3 ;;
    esac
    if [ -e "$dir/stuck" ] && [ "$idx" = "$(cat "$dir/stuck")" ]; then exit 0; fi
    [ "$val" = 1 ] && mode=Enabled || mode=Disabled
    sed "s/^$idx, .*/$idx, $mode/" "$dir/state" >"$dir/state.new" && mv "$dir/state.new" "$dir/state"
    echo "$mode MIG Mode for GPU $idx"
    ;;
  *)
    echo "fake ssh: unknown command: $cmd" >&2
    exit 127
    ;;
esac
