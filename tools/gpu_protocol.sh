#!/bin/bash
# The GPU protocol on the lent device machine (docs/gpu-run.md): run from the carried checkout's root.
# LABEL names the machine (default nvidia-h200); the file is $LABEL.duckdb there and comes back as
# $OUT/$LABEL.duckdb.xz; the committed file a fresh lease measures again travels as .whl/$LABEL-pub.duckdb.xz.
#   stage N      keep carried part N of the libraries (.whl/site.tar.xz.partNN) in /root/p
#   start        unpack the libraries, copy the checkout to /root/rt, start the full collect detached (no repeats on
#                its own boot: the file's measurements are boots, one repeat on each fresh lease); one play process
#                a core (16 on nvidia-h200, 32 on nvidia-h200-x2, whose second GPU stays idle)
#   wait S       wait up to S seconds for it (or its end), then copy the file and log to $OUT (while it runs:
#                its partial file and log, as $OUT/$LABEL.partial.tar.xz, which `collect --resume` continues),
#                and the Inductor cache once the run has ended (NO_CACHE=1: never; the repeats compile from empty)
#   stop         SIGINT the collect (a clean, resumable file), wait for it, copy as wait does
#   repeat K N   (after start's run ended, same lease) K repeats of N rounds, each `collect --repeat` its own
#                process, on the run's file; it comes back as $OUT/$LABEL.duckdb.xz
#   repeats K N  on a fresh lease: the carried .whl/$LABEL-pub.duckdb.xz (a committed file) and the run's carried
#                .whl/inductor-cache.tar.xz, K repeats of N rounds, each `collect --repeat` its own process;
#                the file comes back xz-compressed as $OUT/$LABEL.duckdb.xz
#   fresh K N    as `repeats K N` without the Inductor cache: torch.compile compiles again in each repeat
#   heldout N    as `repeats 1 N`, on a copy that comes back as $OUT/$LABEL-heldout.duckdb.xz (a held-out
#                repeat: made after the report is built, kept out of the published figures)
#   smoke        before a protocol lease: this code on this lease, every runtime of the protocol in the quick
#                profile with one fresh-process repeat, played as the protocol plays; the file comes back as
#                $OUT/$LABEL-smoke.duckdb.xz (a check: it decides nothing and is never published)
set -u
R=torch-cuda-fp32,torch-cuda-fp32-graph,torch-cuda-fp16,torch-cuda-fp16-graph,torch-cuda-fp32-compile,torch-cuda-fp16-compile,ort-cuda-fp32,ort-cuda-fp32-graph,ort-cuda-fp16,ort-cuda-fp16-graph,trt-fp32,trt-fp32-graph,trt-fp16,trt-fp16-graph,ort-trt-fp32,ort-trt-fp16,trtrtx-fp32,trtrtx-fp32-graph,trtrtx-fp16,trtrtx-fp16-graph,ort-trtrtx-fp32,ort-trtrtx-fp16
LABEL=${LABEL:-nvidia-h200}
FILE=/root/$LABEL.duckdb
env_() {   # one GPU measured and played on, also on a host of two
  export PYTHONPATH=/tmp/site:/root/rt PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/root/inductor CUDA_VISIBLE_DEVICES=0
  cd /root/rt
}
bring() {   # the file xz-compressed: a call brings back files up to about 16 MB; $1: the run has ended
  if [ -f "$FILE" ]; then
    xz -T0 -c "$FILE" > "$OUT/$LABEL.duckdb.xz"
  else   # still running: the file is written as .NAME.PID.partial (and its .wal) until the run ends; a copy of
    # both, taken while it writes, is what `collect --resume` continues from if the lease is lost
    part=$(ls -t /root/."$LABEL".duckdb.*.partial 2>/dev/null | head -1)
    if [ -n "$part" ]; then
      (cd /root && tar -cf - "$(basename "$part")" $(ls "$(basename "$part")".wal 2>/dev/null)) \
        | xz -T0 > "$OUT/$LABEL.partial.tar.xz"
    fi
  fi
  cp /root/collect.log "$OUT/" 2>/dev/null
  [ -n "${1:-}" ] && [ -z "${NO_CACHE:-}" ] && [ -d /root/inductor ] \
    && tar -C /root -cf - inductor | xz -T0 > "$OUT/inductor-cache.tar.xz"
  tail -c 3000 /root/collect.log; ls -la "$OUT"
}
setup() {
  python3 -m pip uninstall -y -q onnxruntime
  if [ ! -f /tmp/site/.unpacked ]; then   # a warm machine keeps what an earlier call unpacked
    mkdir -p /tmp/site && cat /root/p/site.tar.xz.part* | xz -dc | tar -x -C /tmp/site && touch /tmp/site/.unpacked
  fi
  rm -rf /root/p
  rm -rf /root/rt && cp -a . /root/rt && env_
  python3 -c "from collect import provenance as p; print('code_version', p.code_version(), p.code_hash()[:12])"
  # ONNX Runtime's CUDA provider travels with only its sm_90 kernels (docs/gpu-run.md): check it runs here
  python3 -c "
import numpy as np, onnxruntime as ort
s = ort.InferenceSession('data/agent/model.onnx', providers=['CUDAExecutionProvider'])
x = np.load('data/fixed_states.npy')[:1]
print('onnxruntime', ort.__version__, s.get_providers()[0], s.run(None, {s.get_inputs()[0].name: x})[0].shape)" \
    || { echo "ONNX Runtime's CUDA provider does not run here"; exit 3; }
  nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv,noheader; nproc; uptime
  echo "boot $(cat /proc/sys/kernel/random/boot_id)"
}
repeats() {  # $1 repeats of $2 rounds on the carried committed file; $3: the name it comes back as; $4: no cache
  xz -dc ".whl/$LABEL-pub.duckdb.xz" > "$FILE" && rm -rf /root/inductor
  if [ -z "${4:-}" ]; then
    if [ -f .whl/inductor-cache.tar.xz ]; then tar -C /root -xJf .whl/inductor-cache.tar.xz
    else echo "no .whl/inductor-cache.tar.xz carried: torch.compile compiles from an empty cache"; fi
  fi
  setup || exit
  for i in $(seq "$1"); do
    date -u +%T; python3 -m rtreport collect --repeat "$FILE" --rounds "$2" > /root/repeat$i.log 2>&1; echo "rc=$?"
    tail -c 1500 /root/repeat$i.log
  done
  date -u +%T; xz -T0 -c "$FILE" > "$OUT/$3.duckdb.xz"; ls -la "$OUT"
}
case "$1" in
  stage) mkdir -p /root/p && cp .whl/site.tar.xz.part"$2" /root/p/ && ls /root/p ;;
  start)
    setup || exit
    setsid nohup python3 -m rtreport collect --label "$LABEL" --out "$FILE" --runtimes "$R" \
      --play-workers "$(nproc)" --play-slots 8 --play-mps --repeats 0 > /root/collect.log 2>&1 < /dev/null &
    echo $! > /root/pid; date -u +%T; sleep "${2:-30}"; tail -c 2000 /root/collect.log ;;
  wait)
    P=$(cat /root/pid); end=$((SECONDS + $2))
    while kill -0 "$P" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 5; done
    date -u +%T; if kill -0 "$P" 2>/dev/null; then bring; else bring ended; fi ;;
  stop)
    P=$(cat /root/pid); kill -INT "$P"; for _ in $(seq 120); do kill -0 "$P" 2>/dev/null || break; sleep 1; done
    bring ended ;;
  repeat)
    env_
    for i in $(seq "${2:-1}"); do
      date -u +%T; python3 -m rtreport collect --repeat "$FILE" --rounds "${3:-5}" > /root/repeat$i.log 2>&1
      echo "rc=$?"; tail -c 1500 /root/repeat$i.log
    done
    date -u +%T; xz -T0 -c "$FILE" > "$OUT/$LABEL.duckdb.xz"; ls -la "$OUT" ;;
  repeats) repeats "$2" "$3" "$LABEL" ;;
  fresh) repeats "$2" "$3" "$LABEL" no-cache ;;
  heldout) repeats 1 "$2" "$LABEL-heldout" ;;
  smoke)
    setup || exit; date -u +%T
    python3 -m rtreport collect --quick --label "$LABEL" --out "$FILE" --runtimes "$R" --play-workers "$(nproc)" \
      --play-slots 8 --play-mps --repeats 1 > /root/collect.log 2>&1 < /dev/null
    echo "rc=$?"; date -u +%T; grep -v "^\[" /root/collect.log | tail -c 6000
    xz -T0 -c "$FILE" > "$OUT/$LABEL-smoke.duckdb.xz"; ls -la "$OUT" ;;
esac
