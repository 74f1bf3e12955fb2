#!/bin/sh
# SPDX-License-Identifier: MIT
# RankScope's per-node supervisor. Deployed to WORK/tools/ and run with /bin/sh (never a login shell).
#
#   supervisor.sh start RUNDIR MODE   start every rank listed in RUNDIR/ranks, detached from the caller
#   supervisor.sh stop RUNDIR GRACE   SIGTERM every rank's process group, SIGKILL after GRACE s, verify
#   supervisor.sh status RUNDIR       one line per rank: RANK PID running|exited STATUS
#   supervisor.sh rank RUNDIR MODE    run the rankR.cmd of this process's $RANK and record its exit: the
#                                     entry point of a launcher (torchrun --no_python) that starts the ranks
#   supervisor.sh gpu RUNDIR          the GPU sampler: nvidia-smi every second into gpu.csv (run by gpu.cmd)
#
# With RUNDIR/launcher.cmd (torchrun), `start` runs that one command instead of starting each rank; it
# starts the node's ranks through `rank`, and the files below are the same either way.
#
# Files in RUNDIR: ranks (one rank number per line), rankR.cmd (the rank's command, written by the engine
# with every word quoted), rankR.out, rankR.err, rankR.events, rankR.pid, rankR.exit (written when the rank
# ends: its wait status, 128+N for signal N), exits ("RANK STATUS UNIXTIME" per ended rank, in the order
# they ended), alive (rewritten every 2 s while the supervisor lives, by pulse.pid), supervisor.pid, supervisor.log,
# failed, stopping, done; stacks.XXXXXX, a stack capture's own directory while it runs (its shell's pid in
# stacks.XXXXXX/pid): the capture removes it, and one whose shell was killed is swept at the run's end and at stop.
#
# A rank under gdbserver (its number in `debug-rank`): rankR.cmd runs gdbserver, which starts the trainer in a
# process group of its own, and a trainer the debugger detached from outlives gdbserver. Both stay in the
# rank's session (setsid made it), so teardown signals and counts that rank by session (pkill/pgrep -s).
#
# GPU telemetry: on a node with GPUs the engine writes `gpus` (their number) and gpu.cmd (`supervisor.sh gpu`
# with the job's environment, whose PATH may be where the node keeps nvidia-smi). `start` then runs it as its
# own process group (gpu.pid): nvidia-smi writes one CSV line per GPU per second to gpu.csv, its errors to
# gpu.err. It ends with the supervisor, with `stop`, and (kill -9 of the supervisor) with the pulse.
set -u

publish() { # publish FILE VALUE: readers never see a half-written file
    printf '%s\n' "$2" >"$1.tmp" && mv -f "$1.tmp" "$1"
}

# dash's kill takes no "--": "-PGID" right after the signal names a process group.
group_alive() { kill -0 "-$1" 2>/dev/null; }

# Whether process PID runs: one that ended but is not reaped yet (a zombie) does not, though kill -0 finds it. The
# supervisor's parent is gone by the time it ends, so PID 1 reaps it, and some do that late (a container whose first
# process is not an init may never): without this, a stop would wait for it and count it as a process left.
process_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    # /proc/PID/stat: "PID (COMMAND) STATE ..."; the command may hold ") ", the state follows the last one.
    case "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null)" in
    Z*) return 1 ;;
    esac
}

rank_groups() {
    for f in rank*.pid launcher.pid; do
        [ -f "$f" ] && cat "$f"
    done
}

debug_session() { # the session of the rank under gdbserver, if any (its pid: setsid made it the leader)
    [ -f debug-rank ] && cat "rank$(cat debug-rank).pid" 2>/dev/null
}

rank_alive() { # rank_alive GROUP
    if [ "$1" = "$(debug_session)" ] && command -v pgrep >/dev/null 2>&1; then
        pgrep -s "$1" >/dev/null 2>&1
    else
        group_alive "$1"
    fi
}

signal_rank() { # signal_rank SIGNAL GROUP
    kill "-$1" "-$2" 2>/dev/null
    [ "$2" = "$(debug_session)" ] && pkill "-$1" -s "$2" 2>/dev/null
    # A rank stopped by a signal (SIGSTOP, Ctrl-Z's SIGTSTP) only acts on SIGTERM once continued, as a shell's
    # kill does for a stopped job: else it waits for the SIGKILL, and never ends cleanly.
    [ "$1" = TERM ] && kill -CONT "-$2" 2>/dev/null
    :
}

stop_ranks() { # stop_ranks GRACE: TERM, wait, KILL; prints how many process groups survived
    grace=$1
    for g in $(rank_groups); do signal_rank TERM "$g"; done
    waited=0
    while :; do
        alive=0
        for g in $(rank_groups); do rank_alive "$g" && alive=$((alive + 1)); done
        [ "$alive" -eq 0 ] && break
        if [ "$waited" -ge "$((grace * 10))" ]; then
            for g in $(rank_groups); do signal_rank KILL "$g"; done
            sleep 0.2
            break
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    left=0
    for g in $(rank_groups); do rank_alive "$g" && left=$((left + 1)); done
    echo "$left"
}

sweep_captures() { # removes the directories of stack captures whose shell is gone (killed: given up)
    for c in stacks.*; do
        [ -d "$c" ] || continue
        if [ -f "$c/pid" ]; then
            p=$(cat "$c/pid" 2>/dev/null)
            [ -n "$p" ] && { kill -0 "$p" 2>/dev/null || [ -d "/proc/$p" ]; } && continue
        elif [ -z "$(find "$c" -maxdepth 0 -mmin +1 2>/dev/null)" ]; then
            continue # made a moment ago: its pid is being written
        fi
        rm -rf "$c"
    done
}

wait_for() { # wait_for PID: sets waited to its wait status, also when a trapped signal interrupts the wait
    # Not called as $(...): a subshell cannot wait for its parent's children.
    while :; do
        wait "$1"
        waited=$?
        kill -0 "$1" 2>/dev/null || break
    done
}

# The launcher's worker (`rank`) passes TERM and INT on to its rank's process group.
forward() {
    forward_signal=$1
    [ -n "${pid:-}" ] && kill "-$1" "-$pid" 2>/dev/null
}

start_sampler() { # the GPU sampler, its own process group like a rank's, so that it can be ended as a whole
    setsid /bin/sh gpu.cmd </dev/null >gpu.csv 2>gpu.err &
    publish gpu.pid "$!"
}

stop_sampler() {
    [ -f gpu.pid ] && kill -TERM "-$(cat gpu.pid)" 2>/dev/null
}

start_launcher() { # runs launcher.cmd; afterwards, ranks it never started get an exit status and a reason
    setsid /bin/sh launcher.cmd </dev/null >launcher.out 2>launcher.err &
    publish launcher.pid "$!"
    wait_for "$(cat launcher.pid)"
    lstatus=$waited
    publish launcher.exit "$lstatus"
    [ "$(stop_ranks 2)" -eq 0 ] || echo "supervisor: process groups survived SIGKILL after the launcher ended" >&2
    [ "$lstatus" -eq 0 ] && lstatus=1
    for r in $(cat ranks); do
        [ -f "rank$r.exit" ] && continue
        {
            echo "rankscope: the launcher (launcher.cmd) ended with status $lstatus before rank $r recorded an exit; its last words:"
            tail -n 5 launcher.err 2>/dev/null
        } >>"rank$r.err"
        publish "rank$r.exit" "$lstatus"
        echo "$r $lstatus $(date +%s.%N)" >>exits
    done
}

watch_rank() { # watch_rank RANK MODE: runs in a background subshell of the supervisor
    r=$1
    # Not a process group leader here, so setsid makes the rank its own session and group without forking:
    # $! is the rank's pid and its process group id.
    setsid /bin/sh "rank$r.cmd" </dev/null >"rank$r.out" 2>"rank$r.err" &
    pid=$!
    publish "rank$r.pid" "$pid"
    [ -n "${forward_signal:-}" ] && kill "-$forward_signal" "-$pid" 2>/dev/null
    wait_for "$pid"
    status=$waited
    publish "rank$r.exit" "$status"
    # One line per ended rank, appended: the engine follows this file like the logs, by offset.
    echo "$r $status $(date +%s.%N)" >>exits
    if [ "$status" -ne 0 ] && [ "$2" = submit ] && [ ! -e stopping ]; then
        : >failed
        # Under a launcher, the launcher ends the node's other ranks itself (and waits for this process).
        [ -z "${under_launcher:-}" ] && stop_ranks 5 >/dev/null
    fi
}

cmd=${1:-}
dir=${2:-}
[ -n "$dir" ] && cd "$dir" 2>/dev/null || { echo "supervisor: cannot enter run directory '$dir'" >&2; exit 2; }

case "$cmd" in
start)
    mode=${3:-debug}
    publish supervisor.pid "$$"
    trap '' HUP
    watchers=
    [ -f gpus ] && [ -f gpu.cmd ] && start_sampler
    if [ -f launcher.cmd ]; then
        start_launcher &
        watchers=$!
    else
        for r in $(cat ranks); do
            watch_rank "$r" "$mode" &
            watchers="$watchers $!"
        done
    fi
    # A pulse for the engine: "alive" is rewritten every 2 s while the supervisor lives. When it stops
    # changing before every rank has an exit status, the node went down (reboot, OOM killer, kill -9).
    supervisor=$$
    (while process_alive "$supervisor"; do
        date +%s >alive.tmp && mv -f alive.tmp alive
        sleep 2
    done
    stop_sampler) </dev/null >/dev/null 2>&1 &
    publish pulse.pid "$!"
    # shellcheck disable=SC2086 # one word per watcher
    wait $watchers
    kill "$(cat pulse.pid)" 2>/dev/null # no process of the run outlives the supervisor
    stop_sampler
    sweep_captures
    : >done
    ;;
stop)
    : >stopping
    left=$(stop_ranks "${3:-10}")
    # The supervisor exits once it has recorded every rank's status.
    i=0
    while [ -f supervisor.pid ] && process_alive "$(cat supervisor.pid)" && [ "$i" -lt 30 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    if [ -f supervisor.pid ] && process_alive "$(cat supervisor.pid)"; then
        kill -KILL "$(cat supervisor.pid)" 2>/dev/null
        left=$((left + 1))
    fi
    stop_sampler
    if [ -f pulse.pid ]; then
        kill "$(cat pulse.pid)" 2>/dev/null
        sleep 0.1
        process_alive "$(cat pulse.pid)" && left=$((left + 1))
    fi
    [ -f gpu.pid ] && group_alive "$(cat gpu.pid)" && left=$((left + 1))
    sweep_captures
    echo "left=$left"
    ;;
rank)
    r=${RANK:-}
    if [ -z "$r" ] || ! grep -qx "$r" ranks; then
        echo "supervisor: the launcher started a process with RANK=${r:-(unset)}, but this node runs ranks $(tr '\n' ' ' <ranks)" >&2
        exit 2
    fi
    under_launcher=1
    trap 'forward TERM' TERM
    trap 'forward INT' INT
    watch_rank "$r" "${3:-debug}"
    exit "$(cat "rank$r.exit")"
    ;;
gpu)
    # Under gpu.cmd, with the job's environment: nvidia-smi is looked up on its PATH.
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "supervisor: no nvidia-smi on PATH ($PATH): this node sends no GPU telemetry" >&2
        exit 127
    fi
    exec nvidia-smi --query-gpu=timestamp,index,name,pci.bus_id,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,power.limit --format=csv -lms 1000
    ;;
status)
    for r in $(cat ranks); do
        pid=$(cat "rank$r.pid" 2>/dev/null || echo -)
        if [ -f "rank$r.exit" ]; then
            echo "$r $pid exited $(cat "rank$r.exit")"
        elif [ "$pid" != - ] && group_alive "$pid"; then
            echo "$r $pid running"
        else
            echo "$r $pid unknown"
        fi
    done
    ;;
*)
    echo "usage: supervisor.sh start|stop|status|rank|gpu RUNDIR [MODE|GRACE]" >&2
    exit 2
    ;;
esac
