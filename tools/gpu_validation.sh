#!/usr/bin/env bash
# Re-run the GPU validation: every check of the references on CUDA, the benchmarks (events and
# graph timing), the bad calls and the planted bugs. Run from the repository root on a machine
# with a CUDA GPU, torch and Triton (nothing else is needed).
#
#   bash tools/gpu_validation.sh OUT_DIR [TAG] [PART]
#
# PART: checks | bench | zoo | all (default): the parts one after another. WORKSHOPS="id id ..."
# limits every part to those workshops: the report takes each workshop's rows from the latest
# file that has it, so re-running one workshop refreshes only its rows. With WORKSHOPS set,
# PART=parallel runs checks and zoo side by side, then the benchmarks: one workshop's whole
# GPU evidence in one command (on an H200 with CHECK_SHARDS=3 BUGZOO_JOBS=6: about 6 minutes
# for attention and foundations, 3.5 for softmax backward, fused GEMM, online normalization and
# split softmax together, 2 for strided softmax):
# five evidence files, three logs and the bug zoo's parts folder. The planted bugs'
# per-workshop parts go to PARTS_DIR and the console logs to
# LOGS_DIR (both default OUT_DIR), so a machine that returns at most a few files can keep them
# out of OUT_DIR: with both elsewhere, one workshop's run leaves its five evidence files there.
# Writes the evidence files into OUT_DIR with TAG
# (default: today's date) in their names; copy them to benchmarks/results/ and run
# `python3 -m benchmarks report` to rebuild the tables. The parts fit the lent machine's
# 10-minute limit per command when run one per command (checks about 3 min, bench about 3 min,
# zoo about 6 min on an H200, running each workshop's planted bugs 3 at a time: BUGZOO_JOBS).
#
# Checks and planted bugs run one process per workshop, side by side: they are correctness
# runs, so sharing the GPU changes nothing but the wall time. Benchmarks run alone.
#
# The bug zoo has outgrown one command: 216 planted bugs, each mutant compiling its own kernels
# in a fresh process (CPU-bound). Each mutant's check run stops at the first FAIL with the bug's
# hint (`--stop-at-hint`), and each workshop's file is rewritten after every bug, so a run
# stopped by a time limit keeps what it finished (`complete: false`; the report says
# INCOMPLETE). Measured on the H200 machine in the twenty-seventh session, after the checks of
# all six workshops (171 s, CHECK_SHARDS=3): foundations, online normalization, split softmax
# and softmax backward (94 bugs) side by side at BUGZOO_JOBS=4 took 170 s; then strided
# softmax, streaming attention and fused GEMM side by side at BUGZOO_JOBS=5 (15 processes):
# strided softmax's 32 bugs finished in under 8 minutes, fused GEMM reached 27 of 29 and attention
# 25 of 50 by 540 s. So: the four small workshops in one command, strided softmax and fused
# GEMM in another, attention alone or over two commands (BUGZOO_SHARD=0/2, then 1/2, each
# with its own --out), joined after by `python3 -m benchmarks merge-zoo OUT PART...` (which
# refuses parts of different commits or seeds, and says complete once every bug is in).
# The twenty-eighth session: attention's 50 bugs took 139 + 160 s in two shards (BUGZOO_SHARD
# 0/2 at JOBS=10 beside its checks, 1/2 at 13), and on a later machine start its 53 bugs 103 s
# in one command at JOBS=12 (why faster was not analysed); foundations, fused GEMM, online
# normalization and split softmax (107 bugs, JOBS 2-7, beside their checks) 162 s; strided
# softmax's 32 bugs 56 s and softmax backward's 22 bugs 36 s at JOBS=12. So every workshop's
# zoo now fits one command; keep the shards for a slower day.
# The twenty-ninth session ran the whole GPU validation in two commands: `checks` beside `zoo`
# (BUGZOO_JOBS=3, so 18 mutant processes beside 15 check shards) for every workshop but
# attention, from a cold start: checks done after 187 s, the 168 bugs after 211 s; then
# attention alone warm (JOBS=12): checks and 54 bugs in 134 s. After more hints, the six
# (177 bugs) took 293 s cold, attention (57) 179 s warm, and fused GEMM, split softmax and
# softmax backward with attention (147 bugs: zoos at JOBS=3 and 8 side by side) 337 s cold.
set -euo pipefail
out=${1:?usage: bash tools/gpu_validation.sh OUT_DIR [TAG] [PART]}
tag=${2:-$(date +%Y%m%d)}
part=${3:-all}
mkdir -p "$out"
logs=${LOGS_DIR:-$out}  # console logs (not evidence)
mkdir -p "$logs"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-3}  # several processes share the CPU cores
workshops=${WORKSHOPS:-$(python3 -c "from checks import catalog; print(' '.join(catalog.WORKSHOP_IDS))")}
if [[ $part == parallel ]]; then
  [[ -n ${WORKSHOPS:-} ]] || { echo "PART=parallel needs WORKSHOPS=\"id ...\"" >&2; exit 2; }
  bash "$0" "$out" "$tag" checks &
  checks_pid=$!
  bash "$0" "$out" "$tag" zoo &
  zoo_pid=$!
  status=0
  wait "$checks_pid" || status=1
  wait "$zoo_pid" || status=1
  bash "$0" "$out" "$tag" bench || status=1
  exit $status
fi

if [[ $part == checks || $part == all ]]; then
  # CHECK_SHARDS=N splits each workshop's check run over N processes with one seed (`checks run
  # --shard i/N`) and merges their files into the one a single process would write: on a GPU
  # with CPU cores to spare, attention's checks (about 320 s in one process) then take a
  # fraction of the time (N=3 on the H200's 16 cores: attention's whole parallel run 373 s
  # where it took 520-540). CHECKS_DEVICE (default cuda) exists for tests/test_tools.py.
  shards=${CHECK_SHARDS:-1}
  device=${CHECKS_DEVICE:-cuda}
  pids=()
  for w in $workshops; do
    [[ $w == online_normalization ]] && continue  # NumPy on the CPU: no GPU evidence to take
    if (( shards > 1 )); then
      parts="${PARTS_DIR:-$out}/checks-parts-$tag"
      mkdir -p "$parts"
      seed=$(python3 -c "import secrets; print(secrets.randbelow(2**31))")
      (
        spids=()
        for ((i = 0; i < shards; i++)); do
          python3 -m checks run "$w" --impl references --device "$device" --seed "$seed" \
            --shard "$i/$shards" --json "$parts/$w-$i.json" \
            > "$logs/checks-$device-$w-$tag-part$i.log" 2>&1 &
          spids+=($!)
        done
        st=0
        for p in "${spids[@]}"; do wait "$p" || st=1; done
        python3 -m checks merge "$out/checks-$device-$w-$tag.json" \
          $(for ((i = 0; i < shards; i++)); do echo "$parts/$w-$i.json"; done) \
          > "$logs/checks-$device-$w-$tag.log" 2>&1 || st=1
        exit $st
      ) &
    else
      python3 -m checks run "$w" --impl references --device "$device" \
        --json "$out/checks-$device-$w-$tag.json" > "$logs/checks-$device-$w-$tag.log" 2>&1 &
    fi
    pids+=($!)
  done
  status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done  # exit 1 = a FAIL: keep going
  tail -n 4 "$logs"/checks-"$device"-*-"$tag".log
  echo "checks done (status $status)"
fi

if [[ $part == bench || $part == all ]]; then
  if [[ -n ${WORKSHOPS:-} ]]; then  # only those workshops that have benchmarks, named after them
    ids=$(for w in $workshops; do if [[ -f benchmarks/$w.py ]]; then echo "$w"; fi; done | tr '\n' ' ')
    name=$(echo $ids | tr ' ' '-')  # plain characters: the lent machine returns no '+'
  else
    name=full
    ids=
  fi
  if [[ -n ${WORKSHOPS:-} && -z ${ids// /} ]]; then
    echo "no benchmarks for: $workshops (online_normalization runs on the CPU); skipping bench"
  else
    # shellcheck disable=SC2086  # the ids are separate arguments
    python3 -m benchmarks run $ids --mode events --out "$out/bench-events-$name-$tag.json.gz"
    # shellcheck disable=SC2086
    python3 -m benchmarks run $ids --mode graph --out "$out/bench-graph-$name-$tag.json.gz"
  fi
fi

if [[ $part == zoo || $part == all ]]; then
  python3 -m benchmarks badcalls $workshops --device cuda --out "$out/badcalls-cuda-$tag.json" \
    > "$logs/badcalls-cuda-$tag.log" 2>&1 &
  badcalls=$!
  export BUGZOO_JOBS=${BUGZOO_JOBS:-3}  # planted bugs of one workshop run 3 at a time
  tmp="${PARTS_DIR:-$out}/bugzoo-parts-$tag"  # one file per workshop, kept: a stopped run keeps the finished ones
  mkdir -p "$tmp"
  pids=()
  for w in $workshops; do
    python3 -m benchmarks bugzoo "$w" --device cuda --out "$tmp/bugzoo-$w.json" \
      > "$tmp/bugzoo-$w.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  wait "$badcalls" || true
  cat "$tmp"/bugzoo-*.log > "$logs/bugzoo-cuda-$tag.log"
  # One evidence file, as a single run would have written it: the workshops in book order.
  zoo_files=()
  for w in $workshops; do
    if [[ -f $tmp/bugzoo-$w.json ]]; then
      zoo_files+=("$tmp/bugzoo-$w.json")
    else
      echo "missing $tmp/bugzoo-$w.json (that workshop's bug-zoo run failed: see the log)" >&2
    fi
  done
  if (( ${#zoo_files[@]} )); then
    python3 -m benchmarks merge-zoo "$out/bugzoo-cuda-$tag.json" "${zoo_files[@]}" || true
  fi
fi
