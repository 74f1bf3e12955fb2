// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArrayView>
#include <QJsonObject>
#include <QList>
#include <QMetaType>
#include <QPair>
#include <QString>
#include <QStringList>

#include <optional>

namespace rankscope::remote {

// One rank of a run waiting under gdbserver for a debugger, as this machine reaches it (RunEngine::launch with
// LaunchOptions::debugRank). What an IDE needs for a remote attach, and a ready gdb command line.
struct DebugServer {
    int rank = -1;
    QString host;           // the rank's node, as the run names it ("localhost" for this machine)
    QString address;        // "127.0.0.1:PORT" on this machine: the engine's way to gdbserver (PortForwarder)
    QString program;        // the trainer the rank runs, with its symbols, as a file on this machine
    QString sourceDir;      // the trainer's sources on this machine (the folder with CMakeLists.txt and src/)
    QString buildSourceDir; // where the program's debug info says those sources were; empty: sourceDir itself
    QString sysroot;        // "/": this machine's shared libraries are the node's; empty: gdb reads the node's
    QString gdbCommand;     // `gdb -q ... -ex 'target remote ADDRESS' PROGRAM`, every word quoted for a shell

    // {"rank", "host", "address", "program", "source_dir", "build_source_dir"?, "sysroot"?, "gdb_command"}
    [[nodiscard]] QJsonObject toJson() const;
};

// The gdb command line for `server` (its gdbCommand field is ignored): the sysroot, the source path mapping and
// `target remote`, in the order gdb needs them, then the program.
[[nodiscard]] QString gdbCommandLine(const DebugServer& server);

// The port of gdbserver's "Listening on port N" line (it writes it on stderr once it accepts connections).
[[nodiscard]] std::optional<int> gdbserverPort(QByteArrayView line);

// The rankR.cmd of a rank started under gdbserver: `gdbserver --once 127.0.0.1:0 TRAINER ARGS` with the rank's
// environment, in the run directory, the trainer exec'd without a shell (its arguments arrive unchanged). gdbserver
// picks a free port (it listens on every interface whatever host is given: the engine claims its one connection at
// once, see PortForwarder) and the trainer stops before its first instruction until a debugger connects.
// gdbserver exits 0 whatever the trainer did, so the script exits with the trainer's status as gdbserver reported
// it ("Child exited with status N" on the rank's stderr), else gdbserver's own.
[[nodiscard]] QString debugRankScript(const QString& runDir, int rank, const QString& trainer,
                                      const QStringList& arguments, const QList<QPair<QString, QString>>& environment);

} // namespace rankscope::remote

Q_DECLARE_METATYPE(rankscope::remote::DebugServer)
