#!/bin/bash
# Times `verify case --block mig --context` against `verify twin serve` playing a cluster with one
# partitioned A100 (its Node and Devices posted, no run label), the MIG node being the fake ssh
# of cases/tests/fake-ssh.sh. Three runs; each prints its wall time, the hardware rows that
# passed, the ssh calls and mode switches the fake received, and the cards afterwards.
# Usage (from the repo): cargo build --release && cases/scripts/mig-block-live.sh
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
V=${V:-${CARGO_TARGET_DIR:-$REPO/target}/release/verify}
D=$(mktemp -d)
$V twin serve --walkthrough --context-name kind-verify --kubeconfig-out $D/kubeconfig > $D/serve.out &
PID=$!
for _ in $(seq 100); do grep -q '^kubeconfig:' $D/serve.out 2>/dev/null && break; sleep 0.1; done
ADDR=$(head -1 $D/serve.out | awk '{print $NF}')
for _ in $(seq 100); do curl -s $ADDR/apis/kueue.x-k8s.io/v1beta2/clusterqueues | grep -q gpustack-- && break; sleep 0.1; done
curl -s -o /dev/null -w "node %{http_code}\n" -H 'Content-Type: application/json' -X POST $ADDR/api/v1/nodes -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-node-1","labels":{"kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","kubernetes.io/hostname":"gpu-node-1","feature.node.kubernetes.io/cpu-model.vendor_id":"AMD"},"annotations":{"feature.gpustack.ai/cpu-name":"AMD EPYC 7R32"}},"status":{"capacity":{"cpu":"8"}}}'
curl -s -o /dev/null -w "devices %{http_code}\n" -H 'Content-Type: application/json' -X POST $ADDR/apis/worker.gpustack.ai/v1alpha1/devices -d '{"apiVersion":"worker.gpustack.ai/v1alpha1","kind":"Devices","metadata":{"name":"gpu-node-1"},"spec":{"groups":[{"accelerators":[{"id":"GPU-a100-0","index":0,"physicalIndexes":[0],"status":{"logicalSliced":{"coresPercentageOvercommit":false,"count":0},"physicalSliced":{"count":7,"profiles":[{"computeSlices":7,"count":1,"memoryMib":40192,"memorySlices":8,"name":"7g.40gb","placements":[{"length":8,"start":0}]}]},"unhealthy":false},"topology":{"cpuAffinity":"","numaAffinity":"","pciBusId":"","pciClass":"0302","pciRootId":""}}],"cores":108,"id":"a100","manufacturer":"nvidia","memory":40960,"name":"NVIDIA A100-SXM4-40GB"}]}}'
mkdir -p $D/node
for run in 1 2 3; do
  printf '0, Disabled\n1, Disabled\n' > $D/node/state; rm -f $D/node/log
  s=$(date +%s.%N)
  MIG_NODE_SSH=root@gpu-node-1 VERIFY_SSH=$REPO/cases/tests/fake-ssh.sh MIG_NODE_SSH_OPTS="-F $D/node/ssh_config" \
    $V case --block mig --context kind-verify --kubeconfig $D/kubeconfig --yes > $D/out.$run 2>&1
  rc=$?
  e=$(date +%s.%N)
  echo "run $run: exit $rc, $(awk "BEGIN{printf \"%.2f\", $e - $s}") s, hardware rows PASS: $(grep -c '^PASS | the hardware step' $D/out.$run), ssh calls: $(wc -l < $D/node/log), switches: $(grep -c ' -mig ' $D/node/log), state after: $(tr '\n' ' ' < $D/node/state)"
done
kill $PID
wait $PID 2>/dev/null
rm -rf "$D"
