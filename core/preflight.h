// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArrayView>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QVector>

// The node pre-flight check. resources/remote/probe.sh runs on a node (as `/bin/sh -s -- ARGS`, the script
// on stdin) and prints what it found as key=value lines between two marker lines; parseProbeOutput reads
// them back, and adviseSocketIfname turns the interface list into a NCCL_SOCKET_IFNAME suggestion.
namespace rankscope {

struct NetInterface {
    QString name;
    QString address; // without the prefix length; IPv6 in its canonical short form ("fd00::2")
    int prefixLength = 0;
    bool up = false;
};

// One LibTorch CMake package directory, the value Torch_DIR would take.
struct TorchInstall {
    QString cmakeDir;
    QString source;  // "Torch_DIR" (environment), "system" (/usr/lib/*/cmake, /usr/share/cmake), or the python
                     // that found it: "python3" (first on PATH) or "/usr/bin/python3"
    QString version; // empty when unknown
    // A python torch may come without its CMake files (Debian's python3-torch ships them in libtorch-dev):
    // then cmakeDir is where they would be, and nothing can be built against it.
    bool hasConfig = false;
};

// What the probe reported. Strings are as the probe wrote them; a probe that could not find something out
// writes "unknown" (or "missing" for a tool), and a key it did not write at all leaves the field empty.
struct ProbeReport {
    bool complete = false; // the end marker was seen: nothing was cut off

    QString os; // PRETTY_NAME of os-release
    QString osId;
    QString osVersion;
    QString arch; // uname -m
    QString kernel;
    QString hostname;
    QString user;
    QString home;

    QString workdir;       // absolute, symlinks of its existing part resolved; empty when no --workdir
    QString workdirTested; // the directory writability and free space were taken from: the nearest existing one
    bool workdirExists = false;
    bool workdirWritable = false; // the work directory could be created and written (workdirTested is writable)
    qint64 diskFreeKb = -1;       // -1: unknown

    QString nvidiaSmi;       // "ok", "missing" or "error"
    QString nvidiaSmiDetail; // on error: its first output line and exit status
    QStringList gpus;        // the lines of nvidia-smi -L
    QVector<TorchInstall> torch;
    QString cmake; // version, "missing" or "error"
    QString cxx;   // first line of c++ --version, "missing" or "error"
    QVector<NetInterface> interfaces;

    int listenPort = 0;      // 0: not asked
    QString listenPortInUse; // "yes", "no" or "unknown"
    QString connectHost;     // empty: not asked
    int connectPort = 0;
    QString connectResult; // "open", "refused", "timeout", "unreachable", "unresolved" or "unknown"
    QString connectDetail; // the error as the node saw it, e.g. "Connection refused"

    QStringList warnings;    // what the probe could not use (bad arguments, a work directory that is a file)
    QStringList unknownKeys; // keys this build does not know, e.g. from a newer probe
};

// Reads the probe's stdout. Everything outside the markers is ignored: the login shell may print banners,
// conda or pyenv messages before and after, even without a final newline before the begin marker. CRLF line
// ends (from a pty) are accepted. Output with no begin marker for version 1 gives an empty, incomplete report.
[[nodiscard]] ProbeReport parseProbeOutput(QByteArrayView stdoutBytes);

struct SocketIfnameAdvice {
    QString suggestion; // an interface name; empty when none fits
    QStringList warnings;
};

// Suggests NCCL_SOCKET_IFNAME for a node: the interface whose subnet contains rendezvousAddress (the longest
// prefix, up ones first), else the first up interface that is neither loopback nor virtual. rendezvousAddress
// must be an IP address (brackets allowed) to match a subnet: core cannot resolve host names.
// Warns when the suggestion is lo or a container or VM bridge (docker*, virbr*, veth*, br-*, ...), when it is
// down, and when currentSetting (NCCL's syntax: prefixes, "=" for exact, "^" to exclude) selects lo or
// docker0, selects none of the node's interfaces, or leaves out the suggestion.
[[nodiscard]] SocketIfnameAdvice adviseSocketIfname(const QVector<NetInterface>& interfaces,
                                                    const QString& rendezvousAddress,
                                                    const QString& currentSetting = {});

// The report with the probe's own key names (snake_case); diskFreeKb -1 becomes null.
[[nodiscard]] QJsonObject probeReportToJson(const ProbeReport& report);

} // namespace rankscope
