#!/bin/bash
# The H200 protocol on the lent device machine (docs/gpu-run.md): run from the carried checkout's root.
#   stage N      keep carried part N of the libraries (.whl/site.tar.xz.partNN) in /root/p
#   start        unpack the libraries, copy the checkout to /root/rt, start the full collect detached
#   wait S       wait up to S seconds for it (or its end), then copy the file, log and Inductor cache to $OUT
#   stop         SIGINT the collect (a clean, resumable file), wait for it, copy as wait does
#   repeat       (after start's run ended) `collect --repeat` in fresh processes on the copied file
set -u
R=torch-cuda-fp32,torch-cuda-fp32-graph,torch-cuda-fp16,torch-cuda-fp16-graph,torch-cuda-fp32-compile,torch-cuda-fp16-compile,ort-cuda-fp32,ort-cuda-fp32-graph,ort-cuda-fp16,ort-cuda-fp16-graph,trt-fp32,trt-fp32-graph,trt-fp16,trt-fp16-graph,ort-trt-fp32,ort-trt-fp16,trtrtx-fp32,trtrtx-fp32-graph,trtrtx-fp16,trtrtx-fp16-graph,ort-trtrtx-fp32,ort-trtrtx-fp16
FILE=/root/h200.duckdb
env_() { export PYTHONPATH=/tmp/site:/root/rt PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/root/inductor; cd /root/rt; }
bring() {
  cp "$FILE" /root/collect.log "$OUT/" 2>/dev/null
  [ -d /root/inductor ] && tar -C /root -cJf "$OUT/inductor-cache.tar.xz" inductor
  tail -c 3000 /root/collect.log; ls -la "$OUT"
}
case "$1" in
  stage) mkdir -p /root/p && cp .whl/site.tar.xz.part"$2" /root/p/ && ls /root/p ;;
  start)
    python3 -m pip uninstall -y -q onnxruntime
    mkdir -p /tmp/site && cat /root/p/site.tar.xz.part* | xz -dc | tar -x -C /tmp/site && rm -rf /root/p
    rm -rf /root/rt && cp -a . /root/rt && env_
    python3 -c "from collect import provenance as p; print('code_version', p.code_version(), p.code_hash()[:12])"
    nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader; nproc; uptime
    setsid nohup python3 -m rtreport collect --label nvidia-h200 --out "$FILE" --runtimes "$R" \
      --play-workers 16 --play-slots 8 --play-mps > /root/collect.log 2>&1 < /dev/null &
    echo $! > /root/pid; date -u +%T; sleep "${2:-30}"; tail -c 2000 /root/collect.log ;;
  wait)
    P=$(cat /root/pid); end=$((SECONDS + $2))
    while kill -0 "$P" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 5; done
    date -u +%T; bring ;;
  stop)
    P=$(cat /root/pid); kill -INT "$P"; for _ in $(seq 120); do kill -0 "$P" 2>/dev/null || break; sleep 1; done
    bring ;;
  repeat)
    env_; python3 -m rtreport collect --repeat "$FILE" > /root/repeat.log 2>&1; echo rc=$?
    cp "$FILE" "$OUT/"; tail -c 3000 /root/repeat.log ;;
esac
