// SPDX-License-Identifier: MIT
#include "remote/nodeworker.h"

#include "core/deploymanifest.h"
#include "remote/debugserver.h"
#include "remote/kernellogread.h"
#include "remote/shellcommand.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QTimer>

namespace rankscope::remote {

namespace {

constexpr int kExitsStream = -1;

QString toolPath(const QString& work, const QString& name) {
    return work + QStringLiteral("/tools/") + name;
}

} // namespace

QVector<ExitLine> parseExitLines(const QByteArray& completeLines) {
    QVector<ExitLine> lines;
    for (const QByteArray& line : completeLines.split('\n')) {
        const QList<QByteArray> words = line.simplified().split(' ');
        if (words.size() < 2)
            continue;
        bool rankOk = false;
        bool statusOk = false;
        ExitLine exit{words[0].toInt(&rankOk), words[1].toInt(&statusOk), words.value(2).toDouble()};
        if (rankOk && statusOk)
            lines.append(exit);
    }
    return lines;
}

namespace {

// The capture of the process whose pid is in the file "$f", its debugger under `timeout "$t"`.
// The rank's pid file holds the trainer's own pid (the supervisor execs it). kill -0 fails with EPERM
// for another user's live process, so /proc decides whether it is gone. The ptrace scope is reported so
// that a refusal can name it.
// A debugger stops the rank to attach (PTRACE_ATTACH sends SIGSTOP). One killed before it detaches, by its
// timeout on a loaded node or by a write to a closed channel, leaves that stop behind, and the whole run
// waits for the stopped rank for good. So the rank is sent SIGCONT once the debugger has ended, however it
// ended (to a running process, SIGCONT does nothing). The subshell does it even when the shell that
// started it is killed (a capture given up). But not a rank that was stopped before (state T: SIGSTOP, Ctrl-Z):
// that stop is the hang the capture looks into, and resuming it would change what is being diagnosed.
QString stackCaptureBody() {
    return QStringLiteral(
        "pid=$(cat \"$f\" 2>/dev/null)\n"
        "[ -n \"$pid\" ] || { echo \"rankscope: no pid file $f (the rank never started)\" >&2; exit 3; }\n"
        "kill -0 \"$pid\" 2>/dev/null || [ -d \"/proc/$pid\" ] || "
        "{ echo \"rankscope: process $pid is gone (the rank ended)\" >&2; exit 3; }\n"
        "scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null)\n"
        // The state is the field after the command name, which may hold spaces and parentheses.
        "st=$(sed 's/.*) //' \"/proc/$pid/stat\" 2>/dev/null | cut -c1)\n"
        "echo \"rankscope-process-state=$st rankscope-pid=$pid\" >&2\n"
        "if command -v gdb >/dev/null 2>&1; then\n"
        "  set -- gdb -nx -p \"$pid\" -batch -ex 'set pagination off' -ex 'set width 0' -ex 'thread apply all "
        "bt'\n"
        "elif command -v eu-stack >/dev/null 2>&1; then\n"
        "  set -- eu-stack -p \"$pid\" -s -m\n"
        "else echo 'rankscope: neither gdb nor eu-stack on the node (install gdb)' >&2; exit 3; fi\n"
        "(timeout -k 5 \"$t\" \"$@\" </dev/null; s=$?\n"
        " case $st in T|t) ;; *) kill -CONT \"$pid\" 2>/dev/null;; esac; exit $s)\n"
        "s=$?; echo \"rankscope-ptrace-scope=$scope\" >&2; exit $s\n");
}

// Debuggers a node's capture runs at once: each holds the symbols of the rank's libraries (LibTorch's CUDA
// library alone is about a gigabyte), so a CPU node with dozens of ranks takes them eight at a time.
constexpr int kParallelCaptures = 8;
// What one debugger may take: gdb held 350 MiB for Debian's CPU LibTorch here, more for the CUDA one. A capture
// runs no more debuggers at once than the memory left fits, and none where one does not fit: a hang is often a
// rank short of memory, and a debugger's allocation then makes the OOM killer end ranks (it did, in the tests'
// memory cgroup: gdb's allocation killed both ranks, where only one had run out).
constexpr int kDebuggerMiB = 1024;

// Sets r to the MiB a debugger may take on the node, and w to what limits it: the node's MemAvailable ("the node"),
// or the memory cgroup this shell is charged to, or one above it, where less of its limit is left (cgroup v1's
// memory.limit_in_bytes, v2's memory.max). Without MemAvailable (kernels before 3.14) the node's is not known.
QString memoryRoomFunction() {
    return QStringLiteral(
        "room() {\n"
        "  r=$(sed -n 's/^MemAvailable: *\\([0-9]*\\) kB$/\\1/p' /proc/meminfo 2>/dev/null)\n"
        "  if [ -n \"$r\" ]; then r=$((r / 1024)); w='the node'; else r=999999999; w=; fi\n"
        "  while IFS=: read -r _ c p; do\n"
        "    case \",$c,\" in\n"
        "      *,memory,*) b=/sys/fs/cgroup/memory; l=memory.limit_in_bytes; u=memory.usage_in_bytes ;;\n"
        "      ,,) b=/sys/fs/cgroup; l=memory.max; u=memory.current ;;\n"
        "      *) continue ;;\n"
        "    esac\n"
        "    while :; do\n"
        "      if lim=$(cat \"$b$p/$l\" 2>/dev/null) && use=$(cat \"$b$p/$u\" 2>/dev/null); then\n"
        "        case $lim in ''|*[!0-9]*) ;; *)\n"
        "          x=$(((lim - use) / 1048576))\n"
        "          [ \"$x\" -ge \"$r\" ] || { r=$x; w=\"memory cgroup ${p:-/}\"; } ;;\n"
        "        esac\n"
        "      fi\n"
        "      [ -n \"$p\" ] && [ \"$p\" != / ] || break\n"
        "      p=${p%/*}\n"
        "    done\n"
        "  done </proc/self/cgroup\n"
        "}\n");
}

} // namespace

QString stackCapturesCommand(const QString& runDir, const QStringList& pidFiles, int timeoutSeconds) {
    QStringList quoted;
    for (const QString& pidFile : pidFiles)
        quoted << shellQuote(pidFile);
    // Each rank's capture runs in a subshell of its own (its `exit` ends only that one), its streams and status
    // kept in a directory of the run's, then framed on stdout in rank order for splitStackCaptures(); as many at once
    // as the memory left fits debuggers (kDebuggerMiB), none where not one fits. The directory holds the shell's
    // pid: one whose shell was killed (a capture given up) is removed by the supervisor when the run ends or is
    // stopped (supervisor.sh sweep_captures). One arg() for all: a "%2" in a path is not a placeholder.
    return QStringLiteral("capture() {\nf=$1; t=$2\n") + stackCaptureBody() + QStringLiteral("}\n") +
           memoryRoomFunction() +
           QStringLiteral(
               "d=$(mktemp -d %4/stacks.XXXXXX) || "
               "{ echo 'rankscope: cannot make a directory for the capture in the run directory' >&2; exit 3; }\n"
               "trap 'rm -rf \"$d\"' EXIT\n"
               "echo $$ >\"$d/pid\"\n"
               "trap 'exit 1' HUP PIPE INT TERM\n"
               "room\n"
               "n=$((r / %5)); [ \"$n\" -le %3 ] || n=%3\n"
               "i=0\n"
               "for f in %1; do\n"
               "  if [ \"$n\" -lt 1 ]; then\n"
               "    : >\"$d/$i.out\"; echo 3 >\"$d/$i.rc\"\n"
               "    echo \"rankscope: not captured: $r MiB free for a debugger ($w), which takes up to %5 MiB for the "
               "symbols of the rank's libraries: the OOM killer could end a rank\" >\"$d/$i.err\"\n"
               "  else\n"
               "    ( (capture \"$f\" %2) >\"$d/$i.out\" 2>\"$d/$i.err\"; echo $? >\"$d/$i.rc\") </dev/null &\n"
               "    [ $(((i + 1) % n)) -ne 0 ] || wait\n"
               "  fi\n"
               "  i=$((i + 1))\n"
               "done\n"
               "wait\n"
               "j=0\n"
               "while [ $j -lt $i ]; do\n"
               "  for s in out err rc; do\n"
               "    [ -f \"$d/$j.$s\" ] || : >\"$d/$j.$s\"\n"
               "    printf 'rankscope-capture %s %s %s\\n' $j $s $(wc -c <\"$d/$j.$s\")\n"
               "    cat \"$d/$j.$s\"\n"
               "  done\n"
               "  j=$((j + 1))\n"
               "done\n")
               .arg(quoted.join(QLatin1Char(' ')), QString::number(timeoutSeconds), QString::number(kParallelCaptures),
                    shellQuote(runDir), QString::number(kDebuggerMiB));
}

NodeWorker::NodeWorker(int nodeIndex, std::unique_ptr<Transport> transport, NodeWorkerOptions options)
    : m_node(nodeIndex), m_transport(std::move(transport)), m_options(options) {}

NodeWorker::~NodeWorker() = default;

QString NodeWorker::absolute(const QString& path) const {
    if (path.startsWith(QLatin1Char('/')))
        return QDir::cleanPath(path);
    QString relative = path;
    if (relative.startsWith(QLatin1String("~/")))
        relative = relative.mid(2);
    return QDir::cleanPath(m_home + QLatin1Char('/') + relative);
}

// Whether a socket listens on `port` (IPv4 or IPv6), from the kernel's tables: no tool beyond awk is assumed on the
// node. Exit status 0: something listens; 1: nothing; other: the tables could not be read, which passes.
void NodeWorker::checkMasterPortFree(int port) {
    // The tables name the local port in four upper-case hex digits: "00000000:7301", state 0A = LISTEN.
    const QString hexPort = QStringLiteral("%1").arg(port, 4, 16, QLatin1Char('0')).toUpper();
    const QString command = QStringLiteral("cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v p=':%1$' "
                                           "'$2 ~ p && $4 == \"0A\" { found = 1 } END { exit found ? 0 : 1 }'")
                                .arg(hexPort);
    const ExecResult result = m_transport->exec(command, {}, std::chrono::seconds(30));
    if (result.exitStatus == 0)
        throw TransportError(TransportErrorKind::Io, m_transport->host(),
                             QStringLiteral("master port %1 is already in use (another run, or another program, "
                                            "listens there): stop it, or choose another master_port")
                                 .arg(port));
}

void NodeWorker::prepare(const NodeLaunch& launch) {
    try {
        emit progress(m_node, QStringLiteral("connecting"));
        m_transport->connect();
        m_home = m_transport->homeDirectory();
        m_workDir = absolute(launch.workDir.isEmpty() ? QStringLiteral("rankscope") : launch.workDir);
        emit progress(m_node, QStringLiteral("deploying to %1").arg(m_workDir));
        deployTools();
        bool thisMachines = false;
        const QString trainer = deployTrainer(launch.deploy, &thisMachines);
        emit trainerDeployed(m_node, trainer, thisMachines,
                             thisMachines ? QString() : m_workDir + QStringLiteral("/trainer/src"));
        if (launch.masterPort > 0)
            checkMasterPortFree(launch.masterPort);
        m_runDir = m_workDir + QStringLiteral("/runs/%1/node%2").arg(launch.runId).arg(launch.nodeIndex);
        m_debugRank = launch.debugRank;
        writeRunFiles(launch, trainer);
        m_mode = launch.mode;
        m_ranks.clear();
        for (const RankLaunch& rank : launch.ranks)
            m_ranks.append(rank.rank);
        m_followGpu = launch.gpus > 0;
        emit prepared(m_node);
    } catch (const TransportError& error) {
        m_launchFailed = true;
        emit failed(m_node, static_cast<int>(error.kind()), error.message());
    }
}

void NodeWorker::start() {
    if (m_launchFailed || m_runStarted)
        return;
    try {
        emit progress(m_node, QStringLiteral("starting %1 rank(s)").arg(m_ranks.size()));
        m_runStarted = true; // from here a stop goes to the supervisor, started or not
        startSupervisor(m_mode);
        m_offsets = {};
        emit launched(m_node, m_runDir);
        startFollowing();
    } catch (const TransportError& error) {
        m_launchFailed = true;
        emit failed(m_node, static_cast<int>(error.kind()), error.message());
    }
}

void NodeWorker::attach(const QString& runDir, const QVector<int>& ranks, const StreamOffsets& offsets, int debugRank) {
    m_runDir = runDir;
    m_ranks = ranks;
    m_debugRank = debugRank;
    m_offsets = offsets;
    m_followGpu.reset();
    m_runStarted = true;
    try {
        emit progress(m_node, QStringLiteral("connecting"));
        m_transport->connect();
    } catch (const TransportError& error) {
        if (error.kind() == TransportErrorKind::LinkLost || error.kind() == TransportErrorKind::Unreachable ||
            error.kind() == TransportErrorKind::Refused) {
            handleLinkError(error); // the node may come back: keep trying
            return;
        }
        emit failed(m_node, static_cast<int>(error.kind()), error.message());
        return;
    }
    startFollowing();
}

void NodeWorker::deployTools() {
    // The tools are tiny, but a redeploy must still upload nothing: compare manifests first.
    QString error;
    const auto local = DeployManifest::fromDirectory(QStringLiteral(":/rankscope/remote"), &error);
    if (!local)
        throw TransportError(TransportErrorKind::Io, m_transport->host(), error);
    const QString manifestPath = toolPath(m_workDir, QStringLiteral(".manifest"));
    std::optional<DeployManifest> deployed;
    if (const auto text = m_transport->readWhole(manifestPath))
        deployed = DeployManifest::parse(*text, nullptr);
    const QVector<ManifestEntry> changed = local->changedFrom(deployed.value_or(DeployManifest()));
    if (changed.isEmpty())
        return;
    m_transport->makeDirectories(m_workDir + QStringLiteral("/tools"));
    for (const ManifestEntry& entry : changed)
        m_transport->uploadFile(QStringLiteral(":/rankscope/remote/") + entry.path, toolPath(m_workDir, entry.path),
                                0755);
    m_transport->writeFile(manifestPath, local->serialize());
}

QString NodeWorker::platform() {
    const ExecResult result =
        m_transport->exec(QStringLiteral("uname -m; (. /etc/os-release 2>/dev/null; echo \"$ID $VERSION_ID\")"), {},
                          std::chrono::seconds(30));
    return QString::fromUtf8(result.out).simplified();
}

QString NodeWorker::deployTrainer(const DeployPlan& plan, bool* thisMachines) {
    *thisMachines = true;
    if (m_transport->isLocal() && plan.strategy != QLatin1String("build") && !plan.localTrainer.isEmpty())
        return plan.localTrainer; // this machine's own binary
    if (plan.strategy == QLatin1String("binary"))
        return deployBinary(plan, true);
    if (plan.strategy == QLatin1String("auto") && !plan.localTrainer.isEmpty()) {
        // A node already verified for this binary needs no command at all.
        const QString dir =
            m_workDir + QStringLiteral("/trainer/bin-") + QString::fromLatin1(plan.localTrainerSha256.left(16));
        if (m_transport->fileSize(dir + QStringLiteral("/ok")))
            return dir + QStringLiteral("/rankscope-trainer");
        const QString nodePlatform = platform();
        if (nodePlatform == plan.localPlatform) {
            const QString binary = deployBinary(plan, false);
            if (!binary.isEmpty())
                return binary;
        }
        emit progress(m_node, QStringLiteral("node is '%1', this machine '%2': building from source")
                                  .arg(nodePlatform, plan.localPlatform));
    }
    *thisMachines = false;
    return buildOnNode(plan);
}

QString NodeWorker::deployBinary(const DeployPlan& plan, bool mustWork) {
    const QString dir =
        m_workDir + QStringLiteral("/trainer/bin-") + QString::fromLatin1(plan.localTrainerSha256.left(16));
    const QString binary = dir + QStringLiteral("/rankscope-trainer");
    if (m_transport->fileSize(dir + QStringLiteral("/ok")))
        return binary;
    const qint64 localSize = QFileInfo(plan.localTrainer).size();
    if (m_transport->fileSize(binary).value_or(-1) != localSize) {
        emit progress(m_node, QStringLiteral("uploading the trainer binary (%1 MB)").arg(localSize / 1e6, 0, 'f', 1));
        m_transport->makeDirectories(dir);
        m_transport->uploadFile(plan.localTrainer, binary, 0755);
    }
    // The binary links the LibTorch of this machine: it runs on a node only where ldd finds every library.
    const ExecResult check =
        m_transport->exec(QStringLiteral("ldd %1").arg(shellQuote(binary)), {}, std::chrono::seconds(30));
    const bool scriptOrStatic =
        check.out.contains("not a dynamic executable") || check.err.contains("not a dynamic executable");
    if ((check.exitStatus != 0 && !scriptOrStatic) || check.out.contains("not found")) {
        if (mustWork)
            throw TransportError(TransportErrorKind::Io, m_transport->host(),
                                 QStringLiteral("the prebuilt trainer cannot run here (missing libraries: %1); use "
                                                "\"deploy\": \"build\"")
                                     .arg(QString::fromUtf8(check.out).simplified()));
        return {};
    }
    m_transport->writeFile(dir + QStringLiteral("/ok"), {});
    return binary;
}

QString NodeWorker::buildOnNode(const DeployPlan& plan) {
    QString error;
    const auto local = DeployManifest::fromDirectory(plan.sourceRoot, &error);
    if (!local)
        throw TransportError(TransportErrorKind::Io, m_transport->host(), error);
    const QString trainerDir = m_workDir + QStringLiteral("/trainer");
    const QString build = trainerDir + QStringLiteral("/build-") + QString::fromLatin1(local->hash().left(16));
    const QString binary = build + QStringLiteral("/bin/rankscope-trainer");
    if (m_transport->fileSize(build + QStringLiteral("/ok")))
        return binary;

    const QString manifestPath = trainerDir + QStringLiteral("/src.manifest");
    std::optional<DeployManifest> deployed;
    if (const auto text = m_transport->readWhole(manifestPath))
        deployed = DeployManifest::parse(*text, nullptr); // a damaged or hostile manifest means: upload all
    const QVector<ManifestEntry> changed = local->changedFrom(deployed.value_or(DeployManifest()));
    emit progress(m_node, QStringLiteral("uploading %1 changed source file(s)").arg(changed.size()));
    QSet<QString> made;
    for (const ManifestEntry& entry : changed) {
        const QString target = trainerDir + QStringLiteral("/src/") + entry.path;
        const QString parent = target.left(target.lastIndexOf(QLatin1Char('/')));
        if (!made.contains(parent)) {
            m_transport->makeDirectories(parent);
            made.insert(parent);
        }
        m_transport->uploadFile(plan.sourceRoot + QLatin1Char('/') + entry.path, target);
    }
    if (!changed.isEmpty())
        m_transport->writeFile(manifestPath, local->serialize());

    emit progress(m_node, QStringLiteral("building the trainer on the node"));
    ShellCommand command(QStringLiteral("/bin/sh"), {toolPath(m_workDir, QStringLiteral("build-trainer.sh")),
                                                     trainerDir + QStringLiteral("/src"), build});
    for (const auto& [name, value] : plan.buildEnvironment)
        command.setEnvironment(name, value);
    const ExecResult result = m_transport->exec(command.toString(), {}, std::chrono::minutes(30));
    if (result.exitStatus != 0)
        throw TransportError(TransportErrorKind::Io, m_transport->host(),
                             QStringLiteral("building the trainer failed (exit %1): %2")
                                 .arg(result.exitStatus)
                                 .arg(QString::fromUtf8(result.err).trimmed()));
    return binary;
}

void NodeWorker::writeRunFiles(const NodeLaunch& launch, const QString& trainer) {
    m_transport->makeDirectories(m_runDir);
    QByteArray rankList;
    for (const RankLaunch& rank : launch.ranks) {
        QStringList arguments = rank.arguments;
        arguments << QStringLiteral("--events") << m_runDir + QStringLiteral("/rank%1.events").arg(rank.rank);
        ShellCommand command(trainer, arguments);
        for (const auto& [name, value] : rank.environment)
            command.setEnvironment(name, value);
        // exec: the rank's pid (and process group) is the trainer's own, not a shell's.
        const QString script = rank.rank == launch.debugRank
                                   ? debugRankScript(m_runDir, rank.rank, trainer, arguments, rank.environment)
                                   : QStringLiteral("cd %1 && exec %2\n").arg(shellQuote(m_runDir), command.toString());
        m_transport->writeFile(m_runDir + QStringLiteral("/rank%1.cmd").arg(rank.rank), script.toUtf8());
        rankList += QByteArray::number(rank.rank) + '\n';
    }
    m_transport->writeFile(m_runDir + QStringLiteral("/ranks"), rankList);
    if (launch.debugRank >= 0)
        m_transport->writeFile(m_runDir + QStringLiteral("/debug-rank"), QByteArray::number(launch.debugRank) + '\n');
    if (!launch.launcherCommand.isEmpty()) {
        QStringList arguments = launch.launcherCommand.mid(1);
        arguments << QStringLiteral("/bin/sh") << toolPath(m_workDir, QStringLiteral("supervisor.sh"))
                  << QStringLiteral("rank") << m_runDir << launch.mode;
        ShellCommand command(launch.launcherCommand.first(), arguments);
        for (const auto& [name, value] : launch.launcherEnvironment)
            command.setEnvironment(name, value);
        const QString script = QStringLiteral("cd %1 && exec %2\n").arg(shellQuote(m_runDir), command.toString());
        m_transport->writeFile(m_runDir + QStringLiteral("/launcher.cmd"), script.toUtf8());
    }
    if (launch.gpus > 0) {
        ShellCommand command(QStringLiteral("/bin/sh"),
                             {toolPath(m_workDir, QStringLiteral("supervisor.sh")), QStringLiteral("gpu"), m_runDir});
        for (const auto& [name, value] : launch.samplerEnvironment)
            command.setEnvironment(name, value);
        const QString script = QStringLiteral("cd %1 && exec %2\n").arg(shellQuote(m_runDir), command.toString());
        m_transport->writeFile(m_runDir + QStringLiteral("/gpu.cmd"), script.toUtf8());
        m_transport->writeFile(m_runDir + QStringLiteral("/gpus"), QByteArray::number(launch.gpus) + '\n');
    }
}

void NodeWorker::startSupervisor(const QString& mode) {
    const QString supervisor = toolPath(m_workDir, QStringLiteral("supervisor.sh"));
    // setsid + redirected stdio: the supervisor outlives this SSH session and the app.
    // Not `cd && setsid ... &`: that backgrounds a subshell which keeps the channel's stdout open until the
    // run ends, and the command would only return then.
    const QString command = QStringLiteral("cd %1 || exit 3; setsid /bin/sh %2 start %1 %3 </dev/null >supervisor.log "
                                           "2>&1 & echo started")
                                .arg(shellQuote(m_runDir), shellQuote(supervisor), shellQuote(mode));
    const ExecResult result = m_transport->exec(command, {}, std::chrono::seconds(30));
    if (result.exitStatus != 0 || !result.out.contains("started"))
        throw TransportError(TransportErrorKind::Io, m_transport->host(),
                             QStringLiteral("cannot start the supervisor in %1: %2")
                                 .arg(m_runDir, QString::fromUtf8(result.err).trimmed()));
}

void NodeWorker::startFollowing() {
    m_drained = false;
    // Time without a pulse counts only while the node is reachable.
    m_sincePulseChanged.invalidate();
    m_sincePulseChecked.invalidate();
    if (!m_pollTimer) {
        m_pollTimer = new QTimer(this);
        m_pollTimer->setInterval(m_options.pollIntervalMs);
        connect(m_pollTimer, &QTimer::timeout, this, &NodeWorker::poll);
    }
    m_pollTimer->start();
    poll();
}

void NodeWorker::poll() {
    if (m_shuttingDown || m_drained)
        return;
    if (!m_transport->isConnected()) {
        // Closed by something other than the poll (which stops polling when it loses the link): reconnect.
        handleLinkError(TransportError(TransportErrorKind::LinkLost, m_transport->host(),
                                       QStringLiteral("the connection was closed")));
        return;
    }
    try {
        const qint64 passBegan = QDateTime::currentMSecsSinceEpoch();
        const bool drainedNow = pollOnce();
        m_copiedUntilMs.store(passBegan, std::memory_order_relaxed);
        if (drainedNow) {
            m_drained = true;
            m_pollTimer->stop();
            emit drained(m_node);
        }
    } catch (const TransportError& error) {
        handleLinkError(error);
    }
}

bool NodeWorker::pollOnce() {
    // Exits first: when every rank has ended before this pass, the reads below reach the files' real end.
    const bool allEndedBefore = m_exits.size() == m_ranks.size();
    const QByteArray exitBytes =
        m_transport->readFrom(m_runDir + QStringLiteral("/exits"), m_offsets.exits, m_options.maxReadBytes);
    QVector<ExitLine> newExits;
    if (!exitBytes.isEmpty()) {
        m_offsets.exits += exitBytes.size();
        m_exitsTail += exitBytes;
        const qsizetype end = m_exitsTail.lastIndexOf('\n');
        if (end >= 0) {
            for (const ExitLine& exit : parseExitLines(m_exitsTail.left(end + 1))) {
                if (!m_exits.contains(exit.rank) && m_ranks.contains(exit.rank)) {
                    m_exits.insert(exit.rank, exit.status);
                    newExits.append(exit);
                }
            }
            m_exitsTail = m_exitsTail.mid(end + 1);
        }
    }
    // The exits read are said after the bytes the ranks wrote before they ended, which the reads below deliver: a
    // front end shows a rank's error before its exit, as it happened. Also when a read fails: none goes unsaid.
    const auto sayExits = [&] {
        for (const ExitLine& exit : std::as_const(newExits))
            emit rankExited(m_node, exit.rank, exit.status, exit.time);
        newExits.clear();
    };
    try {
        if (!allEndedBefore)
            checkPulse();
        for (const int rank : std::as_const(m_ranks)) {
            for (const RankStream stream : kRankStreams) {
                const auto key = qMakePair(rank, static_cast<int>(stream));
                const QString path = m_runDir + QStringLiteral("/rank%1.%2").arg(rank).arg(rankStreamSuffix(stream));
                while (true) {
                    const qint64 offset = m_offsets.streams.value(key);
                    const QByteArray bytes = m_transport->readFrom(path, offset, m_options.maxReadBytes);
                    if (bytes.isEmpty())
                        break;
                    m_offsets.streams.insert(key, offset + bytes.size());
                    emit data(m_node, rank, static_cast<int>(stream), offset, bytes);
                    if (bytes.size() < m_options.maxReadBytes)
                        break;
                }
            }
        }
    } catch (...) {
        sayExits();
        throw;
    }
    sayExits();
    if (!m_followGpu) // attached: the run directory says whether this node samples its GPUs
        m_followGpu = m_transport->fileSize(m_runDir + QStringLiteral("/gpus")).has_value();
    if (*m_followGpu) {
        followGpu();
        followGpuErrors(allEndedBefore);
    }
    return allEndedBefore;
}

void NodeWorker::followGpu() {
    const QString path = m_runDir + QStringLiteral("/gpu.csv");
    while (true) {
        const qint64 offset = m_offsets.gpu;
        const QByteArray bytes = m_transport->readFrom(path, offset, m_options.maxReadBytes);
        if (bytes.isEmpty())
            return;
        m_offsets.gpu = offset + bytes.size();
        emit gpuData(m_node, offset, bytes);
        if (bytes.size() < m_options.maxReadBytes)
            return;
    }
}

void NodeWorker::followGpuErrors(bool force) {
    // What the sampler said on stderr, e.g. that the node has no nvidia-smi: a few lines at most.
    if (!force && m_sinceGpuErrChecked.isValid() && m_sinceGpuErrChecked.elapsed() < 2000)
        return;
    m_sinceGpuErrChecked.start();
    const qint64 offset = m_offsets.gpuErr;
    const QByteArray bytes = m_transport->readFrom(m_runDir + QStringLiteral("/gpu.err"), offset, 64 * 1024);
    if (bytes.isEmpty())
        return;
    m_offsets.gpuErr = offset + bytes.size();
    emit gpuErrors(m_node, offset, bytes);
}

void NodeWorker::checkPulse() {
    if (m_sincePulseChecked.isValid() && m_sincePulseChecked.elapsed() < 2000)
        return;
    m_sincePulseChecked.start();
    // Read whole: the supervisor replaces the file (rename), so a handle kept open would show the old one.
    const QByteArray pulse = m_transport->readWhole(m_runDir + QStringLiteral("/alive")).value_or(QByteArray());
    if (pulse != m_lastPulse || !m_sincePulseChanged.isValid()) {
        m_lastPulse = pulse;
        m_sincePulseChanged.start();
        return;
    }
    if (m_sincePulseChanged.elapsed() < m_options.lostAfterMs)
        return;
    // Lost from its last sign of life, not from when the silence was long enough to say so: that comes much later,
    // after the failures of peers that lost it in a collective. The pulse holds the node's time of writing it (the
    // clock of the ranks' own events), else the time it was last seen to change.
    bool written = false;
    const double pulseTime = m_lastPulse.trimmed().toDouble(&written);
    const double lastAlive =
        written && pulseTime > 0
            ? pulseTime
            : static_cast<double>(QDateTime::currentMSecsSinceEpoch() - m_sincePulseChanged.elapsed()) / 1000.0;
    for (const int rank : std::as_const(m_ranks)) {
        if (!m_exits.contains(rank)) {
            m_exits.insert(rank, kLostExitStatus);
            emit rankExited(m_node, rank, kLostExitStatus, lastAlive);
        }
    }
}

void NodeWorker::handleLinkError(const TransportError& error) {
    if (m_pollTimer)
        m_pollTimer->stop();
    m_transport->disconnect();
    emit linkLost(m_node, error.message());
    if (!m_reconnectTimer) {
        m_reconnectTimer = new QTimer(this);
        m_reconnectTimer->setSingleShot(true);
        m_reconnectTimer->setInterval(m_options.reconnectIntervalMs);
        connect(m_reconnectTimer, &QTimer::timeout, this, &NodeWorker::tryReconnect);
    }
    if (!m_shuttingDown)
        m_reconnectTimer->start();
}

// A command of its own (a stack capture, a kernel log read) found the link dead while the node is followed: the
// poll, which skips a disconnected transport, would never notice. Reconnect as the poll would have.
void NodeWorker::linkFailedBesidePolling(const TransportError& error) {
    if (m_shuttingDown || m_drained || !m_pollTimer || !m_pollTimer->isActive() || m_transport->isConnected())
        return;
    handleLinkError(error);
}

void NodeWorker::tryReconnect() {
    if (m_shuttingDown)
        return;
    try {
        m_transport->connect();
    } catch (const TransportError& error) {
        if (error.kind() == TransportErrorKind::HostKeyChanged || error.kind() == TransportErrorKind::Auth) {
            emit failed(m_node, static_cast<int>(error.kind()), error.message());
            return;
        }
        m_reconnectTimer->start();
        return;
    }
    emit linkRestored(m_node);
    startFollowing();
}

void NodeWorker::stop(int graceSeconds) {
    if (m_launchFailed)
        return; // its `failed` told the engine already; nothing of the run was started here
    if (!m_runStarted) {
        // Prepared, or still preparing when the stop was asked: the run directory holds files, no process.
        emit stopped(m_node, 0, QStringLiteral("no rank was started here"));
        emit drained(m_node);
        return;
    }
    try {
        if (!m_transport->isConnected())
            m_transport->connect();
        if (m_workDir.isEmpty()) // attached: the run directory is WORK/runs/ID/nodeN
            m_workDir = QDir::cleanPath(m_runDir + QStringLiteral("/../../.."));
        const QString command = QStringLiteral("/bin/sh %1 stop %2 %3")
                                    .arg(shellQuote(toolPath(m_workDir, QStringLiteral("supervisor.sh"))),
                                         shellQuote(m_runDir), QString::number(graceSeconds));
        const ExecResult result = m_transport->exec(command, {}, std::chrono::seconds(graceSeconds + 30));
        const qsizetype at = result.out.lastIndexOf("left=");
        const int left = at < 0 ? -1 : result.out.mid(at + 5).trimmed().toInt();
        // The ranks' ends, and what they wrote last, before the stop's own report: a front end shows "rank 1 stopped:
        // SIGTERM" before "teardown verified". A read that fails here is the poll's next pass to meet.
        if (!m_drained) {
            try {
                pollOnce();
            } catch (const TransportError&) {
            }
        }
        emit stopped(m_node, left,
                     at < 0 ? QStringLiteral("stop did not report: %1").arg(QString::fromUtf8(result.err).trimmed())
                            : QString());
        if (!m_drained && m_pollTimer && !m_pollTimer->isActive())
            startFollowing();
    } catch (const TransportError& error) {
        emit stopped(m_node, -1, error.message());
    }
}

void NodeWorker::captureStacks(int job, int timeoutSeconds) {
    QMap<int, RankStackCapture> captures;
    QVector<int> traced;
    QStringList pidFiles;
    for (const int rank : std::as_const(m_ranks)) {
        if (rank == m_debugRank) {
            // gdbserver traces it already, and a second tracer is refused: its debugger shows its stacks.
            captures.insert(rank, {rank,
                                   {},
                                   QStringLiteral("under the debugger (gdbserver): take its stacks there "
                                                  "(thread apply all bt)"),
                                   {}});
            continue;
        }
        traced.append(rank);
        pidFiles.append(m_runDir + QStringLiteral("/rank%1.pid").arg(rank));
    }
    if (!traced.isEmpty()) {
        try {
            if (!m_transport->isConnected())
                m_transport->connect();
            // kParallelCaptures at a time, each bounded by its `timeout` and the SIGKILL 5 s after it.
            const qsizetype rounds = (traced.size() + kParallelCaptures - 1) / kParallelCaptures;
            const ExecResult result =
                m_transport->exec(stackCapturesCommand(m_runDir, pidFiles, timeoutSeconds), {},
                                  std::chrono::seconds(rounds * (timeoutSeconds + 5) + 15), CommandEffect::ReadsOnly);
            const QVector<std::optional<StackCaptureOutput>> outputs =
                splitStackCaptures(result.out, int(traced.size()));
            for (qsizetype i = 0; i < traced.size(); ++i) {
                RankStackCapture capture{traced[i], {}, {}, {}};
                if (const std::optional<StackCaptureOutput>& output = outputs[i]) {
                    capture.error = stackCaptureError(output->out, output->err, output->exitStatus);
                    if (capture.error.isEmpty())
                        capture.stacks = parseStacks(output->out);
                    capture.note = stackCaptureNote(output->err);
                } else {
                    // The node's script failed as a whole (its own sentence: no temporary directory), or was cut
                    // short before this rank's output.
                    capture.error =
                        result.err.contains("rankscope: ")
                            ? stackCaptureError({}, result.err, result.exitStatus)
                            : QStringLiteral("the node's capture said nothing of this rank (exit status %1)")
                                  .arg(result.exitStatus);
                }
                captures.insert(capture.rank, capture);
            }
        } catch (const TransportError& error) {
            if (error.kind() == TransportErrorKind::Abandoned)
                return; // the run is being left: no tree of half its ranks
            for (const int rank : std::as_const(traced))
                captures.insert(rank, {rank, {}, error.message(), {}});
            linkFailedBesidePolling(error);
        }
    }
    QVector<RankStackCapture> inOrder;
    for (const int rank : std::as_const(m_ranks))
        inOrder.append(captures.value(rank));
    emit stacksCaptured(m_node, job, inOrder);
}

void NodeWorker::readKernelLog(int job, double since, int timeoutSeconds, qint64 maxBytes) {
    KernelLogCapture capture;
    try {
        if (!m_transport->isConnected())
            m_transport->connect();
        const ExecResult result =
            m_transport->exec(kernelLogCommand(since, timeoutSeconds, maxBytes, m_runDir), {},
                              std::chrono::seconds(3 * (timeoutSeconds + 2) + 15), CommandEffect::ReadsOnly);
        capture = kernelLogCaptureFrom(result, m_transport->host());
    } catch (const TransportError& error) {
        if (error.kind() == TransportErrorKind::Abandoned)
            return; // the run is being left: nothing was read
        capture.host = m_transport->host();
        capture.problem =
            QStringLiteral("the kernel log of %1 could not be read: %2").arg(error.host(), error.message());
        linkFailedBesidePolling(error);
    }
    capture.node = m_node;
    emit kernelLogRead(m_node, job, capture);
}

void NodeWorker::shutdown() {
    m_shuttingDown = true;
    if (m_pollTimer)
        m_pollTimer->stop();
    if (m_reconnectTimer)
        m_reconnectTimer->stop();
    m_transport->disconnect();
}

} // namespace rankscope::remote
