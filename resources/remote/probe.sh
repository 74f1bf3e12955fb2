#!/bin/sh
# SPDX-License-Identifier: MIT
#
# RankScope's node pre-flight probe: reports facts about a node and changes nothing on it.
#
#   probe.sh [--workdir DIR] [--connect HOST:PORT] [--listen-port PORT]
#
#   --workdir DIR        the run's work directory; "~", "~/x" and relative paths are taken from $HOME.
#                        It is never created: when it is missing, its nearest existing parent is tested.
#   --connect HOST:PORT  try a TCP connection (the rendezvous address, seen from this node); [V6]:PORT
#                        for IPv6 literals.
#   --listen-port PORT   whether something on this node already listens on PORT.
#
# Output: the lines between "@@rankscope-probe-begin v1" and "@@rankscope-probe-end", one key=value per
# line, the value running to the end of the line; list keys repeat. core/preflight.h lists every key.
# What a probe cannot find out reads "unknown" or "missing": no probe aborts the script.
#
# It runs as `/bin/sh -s -- ARGS < probe.sh` through the node's login shell, which explains its shape:
# - POSIX sh (dash, busybox ash), with coreutils at most; bash only for the TCP check, when it exists.
# - The script text is the shell's stdin, and the SSH channel may never send end-of-file. So all the work
#   is in main, called on the last line, which the shell reads whole before it runs anything; main's
#   commands get stdin from /dev/null (one that read the channel would wait forever); and `exit` on that
#   same line keeps the shell from waiting for more script.
# - The login shell may print banners before and after, hence the markers. They are assembled by printf,
#   so the script text itself (echoed by a `set -v` in someone's .bashrc) never contains them.

LC_ALL=C # English error messages, which the connect check matches
export LC_ALL

nl='
'

have() { command -v "$1" >/dev/null 2>&1; }

kv() { printf '%s=%s\n' "$1" "$2"; }

# Values run to the end of the line: a command's second line would be read as a key.
first_line() { printf '%s' "${1%%"$nl"*}"; }

# limit SECONDS CMD...: CMD, stopped after SECONDS (status 124) where coreutils' timeout exists.
limit() {
    if have timeout; then
        timeout "$@"
    else
        shift
        "$@"
    fi
}

# Lexically removes ".", ".." and repeated slashes from an absolute path: the part of a work directory
# that does not exist yet cannot be resolved any other way.
normalize_path() {
    np_out=
    np_rest=$1/
    while [ -n "$np_rest" ]; do
        np_part=${np_rest%%/*}
        np_rest=${np_rest#*/}
        case $np_part in
        '' | .) ;;
        ..) np_out=${np_out%/*} ;;
        *) np_out=$np_out/$np_part ;;
        esac
    done
    printf '%s\n' "${np_out:-/}"
}

probe_os() {
    os=unknown os_id=unknown os_version=unknown
    for os_file in /etc/os-release /usr/lib/os-release; do
        [ -r "$os_file" ] || continue
        while IFS='=' read -r os_key os_value || [ -n "$os_key" ]; do
            case $os_value in
            \"*\" | \'*\') os_value=${os_value#?} os_value=${os_value%?} ;;
            esac
            case $os_key in
            PRETTY_NAME) os=$os_value ;;
            ID) os_id=$os_value ;;
            VERSION_ID) os_version=$os_value ;;
            esac
        done <"$os_file"
        break
    done
    kv os "$os"
    kv os_id "$os_id"
    kv os_version "$os_version"
    kv arch "$(uname -m 2>/dev/null || echo unknown)"
    kv kernel "$(uname -r 2>/dev/null || echo unknown)"
    kv hostname "$(uname -n 2>/dev/null || echo unknown)"
    kv user "$(id -un 2>/dev/null || echo "${USER:-${LOGNAME:-unknown}}")"
    kv home "${HOME:-unknown}"
}

# Available KiB on the file system holding $1 (POSIX df output: the fourth field of the second line).
disk_free_kb() {
    df_out=$(limit 5 df -Pk -- "$1" 2>/dev/null)
    df_line=${df_out#*"$nl"}
    set -f
    # shellcheck disable=SC2086 # split into fields on purpose
    set -- $df_line
    set +f
    case $4 in
    '' | *[!0-9]*) echo unknown ;;
    *) echo "$4" ;;
    esac
}

probe_workdir() {
    wd_home=${HOME:-$(pwd)}
    # shellcheck disable=SC2088 # a literal "~" from the command line, which the shell did not expand
    case $1 in
    '~') wd=$wd_home ;;
    '~/'*) wd=$wd_home/${1#'~/'} ;;
    /*) wd=$1 ;;
    *) wd=$wd_home/$1 ;;
    esac
    wd=$(normalize_path "$wd")

    # The nearest existing ancestor is what mkdir -p would start from: its permissions and file system
    # decide whether the work directory can be created.
    wd_base=$wd wd_tail=
    while [ ! -e "$wd_base" ] && [ "$wd_base" != / ]; do
        wd_tail=/${wd_base##*/}$wd_tail
        wd_base=${wd_base%/*}
        [ -n "$wd_base" ] || wd_base=/
    done
    if [ -d "$wd_base" ]; then
        wd_real=$(cd -P -- "$wd_base" 2>/dev/null && pwd -P) || wd_real=$wd_base
    else
        kv warning "work directory: $wd_base exists and is not a directory"
        wd_real=$(cd -P -- "${wd_base%/*}/" 2>/dev/null && pwd -P) || wd_real=${wd_base%/*}
        wd_real=${wd_real%/}/${wd_base##*/}
    fi
    wd_resolved=${wd_real%/}$wd_tail
    kv workdir "${wd_resolved:-/}"
    if [ -z "$wd_tail" ] && [ -d "$wd_base" ]; then kv workdir_exists yes; else kv workdir_exists no; fi
    kv workdir_tested "$wd_real"
    if [ -d "$wd_base" ] && [ -w "$wd_base" ] && [ -x "$wd_base" ]; then
        kv workdir_writable yes
    else
        kv workdir_writable no
    fi
    if [ -d "$wd_base" ]; then kv disk_free_kb "$(disk_free_kb "$wd_base")"; else kv disk_free_kb unknown; fi
}

probe_nvidia_smi() {
    if ! have nvidia-smi; then
        kv nvidia_smi missing
        return
    fi
    gpu_out=$(limit 10 nvidia-smi -L 2>&1)
    gpu_rc=$?
    if [ "$gpu_rc" -ne 0 ]; then
        kv nvidia_smi error
        if [ "$gpu_rc" -eq 124 ]; then
            kv nvidia_smi_detail "nvidia-smi -L did not finish within 10 s"
        else
            kv nvidia_smi_detail "$(first_line "$gpu_out") (exit status $gpu_rc)"
        fi
        return
    fi
    kv nvidia_smi ok
    while read -r gpu_line; do
        [ -n "$gpu_line" ] && kv gpu "$gpu_line"
    done <<EOF
$gpu_out
EOF
}

# tool_version KEY CMD...: the first line of CMD's output as KEY; "error" when CMD fails, with a warning
# when it hung (a slow probe should say why).
tool_version() {
    tv_key=$1
    shift
    tv_out=$(limit 10 "$@" 2>/dev/null)
    tv_rc=$?
    if [ "$tv_rc" -eq 0 ]; then
        tv_out=$(first_line "$tv_out")
        kv "$tv_key" "${tv_out#cmake version }"
        return
    fi
    kv "$tv_key" error
    [ "$tv_rc" -eq 124 ] && kv warning "$* did not finish within 10 s"
}

probe_tool_versions() {
    if have cmake; then tool_version cmake cmake --version; else kv cmake missing; fi
    if have c++; then
        tool_version cxx c++ --version
    elif have g++; then
        tool_version cxx g++ --version
    else
        kv cxx missing
    fi
}

# The version a CMake config directory announces in TorchConfigVersion.cmake, or nothing.
torch_config_version() {
    [ -r "$1/TorchConfigVersion.cmake" ] || return
    while IFS= read -r tv_line; do
        case $tv_line in
        'set(PACKAGE_VERSION "'*)
            tv_line=${tv_line#*\"}
            printf '%s' "${tv_line%%\"*}"
            return
            ;;
        esac
    done <"$1/TorchConfigVersion.cmake"
}

# find_spec instead of `import torch`: the import takes over a second (more on network file systems),
# and torch.utils.cmake_prefix_path is only <package>/share/cmake, which find_spec gives without it.
# shellcheck disable=SC2016 # Python code, not shell
torch_from_python_code='
import importlib.util, os, re
spec = importlib.util.find_spec("torch")
if spec and spec.submodule_search_locations:
    pkg = list(spec.submodule_search_locations)[0]
    version = ""
    try:
        with open(os.path.join(pkg, "version.py")) as f:
            m = re.search(r"^__version__\s*=\s*[\x27\x22]([^\x27\x22]+)", f.read(), re.M)
            version = m.group(1) if m else ""
    except OSError:
        pass
    print(os.path.join(pkg, "share", "cmake", "Torch") + "|" + version)
'

# torch_from_python PYTHON SOURCE: the torch that PYTHON imports, as SOURCE|VERSION|DIR (or a warning= line).
torch_from_python() {
    have "$1" || return
    py_out=$(limit 10 "$1" -c "$torch_from_python_code" 2>/dev/null)
    case $? in
    0) ;;
    124)
        kv warning "$1 did not finish within 10 s: its torch is not reported"
        return
        ;;
    *) return ;;
    esac
    py_out=$(first_line "$py_out")
    case $py_out in
    *'|'*) printf '%s|%s|%s\n' "$2" "${py_out##*|}" "${py_out%|*}" ;;
    esac
}

# Prints "torch=SOURCE|VERSION|CONFIG|DIR" once per directory, the cheap system-wide sources first
# (CONFIG: whether DIR holds TorchConfig.cmake). DIR comes last because a path may contain "|".
probe_torch() {
    torch_candidates=
    [ -n "${Torch_DIR:-}" ] && torch_candidates="Torch_DIR||$Torch_DIR"
    for torch_dir in /usr/share/cmake/Torch /usr/lib/*/cmake/Torch; do
        [ -d "$torch_dir" ] && torch_candidates="$torch_candidates${nl}system||$torch_dir"
    done
    # The python candidates, SOURCE|VERSION|DIR lines, were found in the background.
    torch_candidates=$torch_candidates$nl$1
    torch_seen=
    while IFS= read -r torch_line; do
        case $torch_line in
        '') continue ;;
        warning=*)
            printf '%s\n' "$torch_line"
            continue
            ;;
        esac
        torch_source=${torch_line%%|*}
        torch_line=${torch_line#*|}
        torch_version=${torch_line%%|*}
        torch_dir=${torch_line#*|}
        torch_real=$(cd -P -- "$torch_dir" 2>/dev/null && pwd -P) || torch_real=$torch_dir
        case "$nl$torch_seen$nl" in *"$nl$torch_real$nl"*) continue ;; esac
        torch_seen=$torch_seen$nl$torch_real
        [ -n "$torch_version" ] || torch_version=$(torch_config_version "$torch_real")
        torch_config=no
        if [ -r "$torch_real/TorchConfig.cmake" ] || [ -r "$torch_real/torch-config.cmake" ]; then
            torch_config=yes
        fi
        kv torch "$torch_source|$torch_version|$torch_config|$torch_real"
    done <<EOF
$torch_candidates
EOF
}

# up when the interface is administratively up and its link is not known to be down.
iface_state() {
    is_flags='' is_oper=''
    [ -r "/sys/class/net/$1/flags" ] || {
        echo unknown
        return
    }
    read -r is_flags <"/sys/class/net/$1/flags"
    case $is_flags in 0x*) ;; *)
        echo unknown
        return
        ;;
    esac
    if [ $((is_flags & 1)) -eq 0 ]; then
        echo down
        return
    fi
    [ -r "/sys/class/net/$1/operstate" ] && read -r is_oper <"/sys/class/net/$1/operstate"
    case $is_oper in
    down | lowerlayerdown | notpresent) echo down ;;
    *) echo up ;;
    esac
}

# IPv4 addresses and global IPv6 ones; link-local IPv6 is useless to NCCL without a scope id.
ifaces_from_ip() {
    have ip || return 1
    ip_out=$(limit 5 ip -o addr show 2>/dev/null) || return 1
    [ -n "$ip_out" ] || return 1
    while read -r _ ip_name ip_family ip_addr ip_rest; do
        case $ip_family in
        inet) ;;
        inet6) case " $ip_rest " in *' scope global '*) ;; *) continue ;; esac ;;
        *) continue ;;
        esac
        ip_name=${ip_name%%@*}
        kv iface "$ip_name $ip_addr $(iface_state "$ip_name")"
    done <<EOF
$ip_out
EOF
}

ipv6_from_hex() {
    v6_hex=$1 v6_out=
    while [ -n "$v6_hex" ]; do
        v6_group=${v6_hex%"${v6_hex#????}"}
        v6_hex=${v6_hex#????}
        while case $v6_group in 0?*) true ;; *) false ;; esac; do v6_group=${v6_group#0}; done
        v6_out=$v6_out:$v6_group
    done
    printf '%s' "${v6_out#:}"
}

# Route-table hex is the address's memory image: byte-reversed on little-endian machines.
route_hex_to_int() {
    rh=$1
    if [ "$little_endian" = yes ]; then
        rh_1=${rh%??????} rh_2=${rh#??} rh_3=${rh#????} rh_4=${rh#??????}
        rh=$rh_4${rh_3%??}${rh_2%????}$rh_1
    fi
    echo $((0x$rh))
}

ipv4_to_int() {
    IFS=. read -r a4 b4 c4 d4 <<EOF
$1
EOF
    echo $(((a4 << 24) | (b4 << 16) | (c4 << 8) | d4))
}

# Without ip(8): local IPv4 addresses from the FIB trie, each matched to the interface whose connected
# route contains it (loopback routes live in the local table, hence the 127/8 rule).
ifaces_v4_from_proc() {
    [ -r /proc/net/fib_trie ] || return
    little_endian=yes
    [ "$(printf '\001\000\000\000' | od -An -tx4 2>/dev/null)" = " 01000000" ] && little_endian=no
    v4_prev='' v4_addrs=''
    while read -r v4_a v4_b v4_c _; do
        case "$v4_a $v4_b $v4_c" in
        '|-- '*) v4_prev=$v4_b ;;
        '/32 host LOCAL')
            case " $v4_addrs " in *" $v4_prev "*) ;; *) v4_addrs="$v4_addrs $v4_prev" ;; esac
            ;;
        esac
    done </proc/net/fib_trie
    for v4_addr in $v4_addrs; do
        v4_int=$(ipv4_to_int "$v4_addr")
        v4_best='' v4_best_len=-1
        while read -r rt_if rt_dest _ rt_flags _ _ _ rt_mask _; do
            case $rt_dest in *[!0-9A-Fa-f]* | '') continue ;; esac
            rt_mask_int=$(route_hex_to_int "$rt_mask")
            [ $((v4_int & rt_mask_int)) -eq "$(route_hex_to_int "$rt_dest")" ] || continue
            rt_len=0 rt_bits=$rt_mask_int
            while [ "$rt_bits" -ne 0 ]; do
                rt_len=$((rt_len + (rt_bits & 1)))
                rt_bits=$((rt_bits >> 1))
            done
            # Gateway routes (flag 2) do not say which interface holds the address.
            [ $((0x$rt_flags & 2)) -eq 0 ] && [ "$rt_len" -gt "$v4_best_len" ] && v4_best=$rt_if v4_best_len=$rt_len
        done </proc/net/route
        if [ -z "$v4_best" ]; then
            case $v4_addr in 127.*) v4_best=lo v4_best_len=8 ;; *) continue ;; esac
        fi
        kv iface "$v4_best $v4_addr/$v4_best_len $(iface_state "$v4_best")"
    done
}

ifaces_from_proc() {
    ifaces_v4_from_proc
    [ -r /proc/net/if_inet6 ] || return
    # ADDRESS IFINDEX PREFIXLEN SCOPE FLAGS NAME, in hex; scope 00 is global.
    while read -r v6_addr _ v6_len v6_scope _ v6_name; do
        [ "$v6_scope" = 00 ] || continue
        kv iface "$v6_name $(ipv6_from_hex "$v6_addr")/$((0x$v6_len)) $(iface_state "$v6_name")"
    done </proc/net/if_inet6
}

probe_interfaces() {
    ifaces_from_ip || ifaces_from_proc
}

# Only listening sockets count: c10d's TCPStore binds with SO_REUSEADDR, which Linux lets through
# everything on the port except a listener.
probe_listen_port() {
    lp_result=unknown
    for lp_file in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$lp_file" ] || continue
        [ "$lp_result" = unknown ] && lp_result=no
        while read -r _ lp_local _ lp_state _; do
            [ "$lp_state" = 0A ] || continue
            lp_port=${lp_local##*:}
            case $lp_port in '' | *[!0-9A-Fa-f]*) continue ;; esac
            if [ $((0x$lp_port)) -eq "$1" ]; then
                lp_result=yes
                break 2
            fi
        done <"$lp_file"
    done
    kv listen_port "$1"
    kv listen_port_in_use "$lp_result"
}

# probe_connect HOST PORT LABEL: refused means the path works and nothing listens; open, that something
# already does.
probe_connect() {
    if ! have bash; then
        kv connect "$3 unknown"
        kv connect_detail "bash not found (the check uses its /dev/tcp)"
        return
    fi
    if ! have timeout; then
        kv connect "$3 unknown"
        kv connect_detail "timeout not found (an unanswered connect would hang for minutes)"
        return
    fi
    # 6 s: a SYN that gets no answer is sent again, after 1 s and 3 s (every second at first on kernels with
    # net.ipv4.tcp_syn_linear_timeouts), so the third is sent with 3 s to spare for its answer and for a busy node
    # slow to start bash. 3 s, the limit before, ended the check as the third SYN went out, and a loaded machine's
    # own master port read as unreachable. No answer in 6 s is a firewall that drops.
    cn_limit=6
    # shellcheck disable=SC2016 # $1 and $2 are bash's, not ours
    cn_err=$(
        unset BASH_ENV ENV
        timeout "$cn_limit" bash -c 'exec 3<>"/dev/tcp/$1/$2"' rankscope-probe "$1" "$2" 2>&1 >/dev/null
    )
    cn_rc=$?
    cn_detail=${cn_err##*"$nl"}
    cn_detail=${cn_detail##*: }
    case $cn_rc in
    0) cn_result=open cn_detail= ;;
    124) cn_result=timeout cn_detail="no answer within $cn_limit s" ;;
    *)
        case $cn_err in
        *refused*) cn_result=refused ;;
        *'No route'* | *nreachable*) cn_result=unreachable ;;
        *'not known'* | *'name resolution'* | *'No address'*)
            cn_result=unresolved
            cn_detail="cannot resolve $1"
            ;;
        *) cn_result=unknown ;;
        esac
        ;;
    esac
    kv connect "$3 $cn_result"
    [ -n "$cn_detail" ] && kv connect_detail "$cn_detail"
}

main() {
    printf '@@%s-probe-begin v1\n' rankscope
    workdir_set=no workdir_arg='' connect_arg='' listen_arg=''
    while [ $# -gt 0 ]; do
        case $1 in
        --workdir | --connect | --listen-port)
            if [ $# -lt 2 ]; then
                kv warning "argument $1 needs a value"
                break
            fi
            opt=$1 val=$2
            shift 2
            ;;
        --workdir=* | --connect=* | --listen-port=*)
            opt=${1%%=*} val=${1#*=}
            shift
            ;;
        *)
            kv warning "ignored argument: $1"
            shift
            continue
            ;;
        esac
        case $opt in
        --workdir) workdir_set=yes workdir_arg=$val ;;
        --connect) connect_arg=$val ;;
        --listen-port) listen_arg=$val ;;
        esac
    done

    connect_host='' connect_port=''
    case $connect_arg in
    '') ;;
    \[*\]:*)
        connect_host=${connect_arg%]:*}
        connect_host=${connect_host#\[}
        connect_port=${connect_arg##*]:}
        ;;
    *:*)
        connect_host=${connect_arg%:*}
        connect_port=${connect_arg##*:}
        ;;
    esac
    case $connect_port in
    '' | *[!0-9]*)
        [ -n "$connect_arg" ] && kv warning "ignored --connect $connect_arg: expected HOST:PORT"
        connect_arg=
        ;;
    esac
    case $listen_arg in
    *[!0-9]*)
        kv warning "ignored --listen-port $listen_arg: expected a port number"
        listen_arg=
        ;;
    esac

    # The slow probes (python start-up, nvidia-smi, an unanswered connect) run side by side in the
    # background, each into its own file; without a temporary directory they run in turn below.
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/rankscope-probe.XXXXXX" 2>/dev/null) || tmp=
    if [ -n "$tmp" ]; then
        trap 'rm -rf "$tmp"' EXIT
        trap 'exit 1' HUP INT TERM
        torch_from_python python3 python3 >"$tmp/python3" 2>/dev/null &
        torch_from_python /usr/bin/python3 /usr/bin/python3 >"$tmp/usr-python3" 2>/dev/null &
        probe_nvidia_smi >"$tmp/nvidia" 2>/dev/null &
        [ -n "$connect_arg" ] && probe_connect "$connect_host" "$connect_port" "$connect_arg" \
            >"$tmp/connect" 2>/dev/null &
    fi

    probe_os
    [ "$workdir_set" = yes ] && probe_workdir "$workdir_arg"
    probe_tool_versions
    probe_interfaces
    [ -n "$listen_arg" ] && probe_listen_port "$listen_arg"

    if [ -n "$tmp" ]; then
        wait
        cat -- "$tmp/nvidia"
        probe_torch "$(cat -- "$tmp/python3" "$tmp/usr-python3")"
        [ -n "$connect_arg" ] && cat -- "$tmp/connect"
    else
        probe_nvidia_smi
        probe_torch "$(torch_from_python python3 python3; torch_from_python /usr/bin/python3 /usr/bin/python3)"
        [ -n "$connect_arg" ] && probe_connect "$connect_host" "$connect_port" "$connect_arg"
    fi
    printf '@@%s-probe-end\n' rankscope
}

main "$@" </dev/null; exit 0
