// SPDX-License-Identifier: MIT
#include "inspectcommand.h"

#include "cli.h"

#include "core/loginspect.h"
#include "core/ranklist.h"
#include "core/repeats.h"

#include <QFile>
#include <QTextStream>

#include <algorithm>
#include <cstdio>

namespace rankscope::cli {

namespace {

QString orDash(const QString& value) { return value.isEmpty() ? QStringLiteral("-") : value; }
QString orDash(qint64 value) { return value < 0 ? QStringLiteral("-") : QString::number(value); }
QString moreTimes(qsizetype count) {
    return count == 1 ? QStringLiteral("once more") : QStringLiteral("%1 more times").arg(count);
}

void appendNccl(QString& out, const NcclFacts& nccl) {
    out += QStringLiteral("NCCL\n");
    if (nccl.isEmpty()) {
        out += QStringLiteral("  nothing found\n");
        return;
    }
    if (!nccl.versions.isEmpty())
        out += QStringLiteral("  versions:   %1\n").arg(nccl.versions.join(QStringLiteral(", ")));
    if (!nccl.hosts.isEmpty())
        out += QStringLiteral("  hosts:      %1\n").arg(nccl.hosts.join(QStringLiteral(", ")));
    if (nccl.nranks > 0)
        out += QStringLiteral("  ranks:      %1 seen of %2\n").arg(nccl.ranks.size()).arg(nccl.nranks);
    if (!nccl.network.isEmpty())
        out += QStringLiteral("  network:    %1%2\n")
                   .arg(nccl.network, nccl.ibNoDevice ? QStringLiteral(" (NET/IB: no device found)") : QString());
    else if (nccl.ibNoDevice)
        out += QStringLiteral("  network:    NET/IB: no device found\n");
    if (!nccl.interfaces.isEmpty())
        out += QStringLiteral("  interfaces: %1\n").arg(nccl.interfaces.join(QStringLiteral(", ")));
    if (!nccl.transports.isEmpty()) {
        QStringList parts;
        for (auto it = nccl.transports.cbegin(); it != nccl.transports.cend(); ++it)
            parts << QStringLiteral("%1 %2").arg(it.key()).arg(it.value());
        out += QStringLiteral("  transports: %1\n").arg(parts.join(QStringLiteral(", ")));
    }
    if (nccl.channels > 0)
        out += QStringLiteral("  channels:   %1\n").arg(nccl.channels);
    for (const NcclCommunicator& comm : nccl.communicators) {
        int complete = 0;
        for (const NcclCommRank& rank : comm.ranks)
            complete += rank.init == QLatin1String("COMPLETE") ? 1 : 0;
        out += QStringLiteral("  communicator %1: %2 ranks, %3 seen, %4 init complete\n")
                   .arg(orDash(comm.commId))
                   .arg(comm.nranks)
                   .arg(comm.ranks.size())
                   .arg(complete);
    }
    // A warning every process printed is shown once, with the processes that repeated it.
    const auto warnings = groupRepeats<NcclWarning>(nccl.warnings, [](const NcclWarning& warning) {
        return warning.source + QLatin1Char('\n') + warning.text + QLatin1Char('\n') +
               warning.chain.join(QLatin1Char('\n'));
    });
    for (const Repeats<NcclWarning>& repeats : warnings) {
        const NcclWarning& warning = *repeats.first;
        out += QStringLiteral("  WARN %1:%2 rank %3 %4: %5\n")
                   .arg(orDash(warning.host), orDash(warning.pid), orDash(warning.rank), orDash(warning.source),
                        warning.text);
        if (!warning.chain.isEmpty())
            out += QStringLiteral("       then %1\n").arg(warning.chain.join(QStringLiteral(", ")));
        if (repeats.again.empty())
            continue;
        QVector<int> ranks;
        QStringList hosts;
        for (const NcclWarning* again : repeats.again) {
            if (again->rank >= 0)
                ranks.append(again->rank);
            if (!again->host.isEmpty() && !hosts.contains(again->host))
                hosts.append(again->host);
        }
        QStringList where;
        if (!ranks.isEmpty())
            where << QStringLiteral("rank(s) %1").arg(formatRankList(ranks));
        if (!hosts.isEmpty())
            where << QStringLiteral("on %1").arg(hosts.join(QStringLiteral(", ")));
        out += QStringLiteral("       and %1%2\n")
                   .arg(moreTimes(static_cast<qsizetype>(repeats.again.size())),
                        where.isEmpty() ? QString() : QStringLiteral(": ") + where.join(QLatin1Char(' ')));
    }
    for (const QString& chain : nccl.orphanChains)
        out += QStringLiteral("  error chain %1\n").arg(chain);
}

void appendTimeouts(QString& out, const QList<CollectiveTimeout>& timeouts) {
    out += QStringLiteral("\nTimeouts\n");
    if (timeouts.isEmpty())
        out += QStringLiteral("  none found\n");
    for (const CollectiveTimeout& t : timeouts) {
        out += QStringLiteral("  rank %1: %2 #%3 ran %4 ms (timeout %5 ms), numel %6 -> %7, last enqueued %8, "
                              "last completed %9\n")
                   .arg(orDash(t.rank), orDash(t.op), orDash(t.seq), orDash(t.ranMs), orDash(t.timeoutMs),
                        orDash(t.numelIn), orDash(t.numelOut), orDash(t.lastEnqueued), orDash(t.lastCompleted));
    }
}

void appendFailures(QString& out, const QList<ElasticFailure>& failures) {
    out += QStringLiteral("\nFailures\n");
    if (failures.isEmpty())
        out += QStringLiteral("  none found\n");
    for (const ElasticFailure& f : failures) {
        // What the log says, no more: the agent's one-line report names only the local rank.
        QString who = f.rank >= 0 ? QStringLiteral("rank %1 (local %2)").arg(f.rank).arg(orDash(f.localRank))
                                  : QStringLiteral("local rank %1").arg(orDash(f.localRank));
        if (!f.host.isEmpty())
            who += QStringLiteral(" on ") + f.host;
        if (!f.time.isEmpty())
            who += QStringLiteral(" at ") + f.time;
        const QString exit = f.exitCode ? QString::number(*f.exitCode) : QStringLiteral("-");
        out += QStringLiteral("  %1%2: exit %3%4, pid %5\n")
                   .arg(f.rootCause ? QStringLiteral("ROOT CAUSE ") : QString(), who, exit,
                        f.signal.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(f.signal), orDash(f.pid));
    }
}

void appendGpus(QString& out, const QList<GpuSample>& gpus) {
    if (gpus.isEmpty())
        return;
    out += QStringLiteral("\nGPUs (last nvidia-smi reading)\n");
    const auto reading = [](double value) {
        return GpuSample::has(value) ? QString::number(value) : QStringLiteral("-");
    };
    for (const GpuSample& g : gpus) {
        out += QStringLiteral("  %1 %2 %3: %4% util, %5/%6 MiB, %7 C, %8/%9 W\n")
                   .arg(orDash(g.index), orDash(g.name), orDash(g.busId), reading(g.utilizationPercent),
                        reading(g.memoryUsedMiB), reading(g.memoryTotalMiB), reading(g.temperatureC),
                        reading(g.powerWatts), reading(g.powerLimitWatts));
    }
}

// An error whose text was found before (the same exception on every rank) is shown once, with the ranks and lines
// that repeat it; --json lists each.
void appendErrors(QString& out, const QList<LogError>& errors) {
    constexpr size_t kPlacesShown = 6;
    const auto groups = groupRepeats<LogError>(errors, [](const LogError& e) { return e.text; });
    out += groups.size() == static_cast<size_t>(errors.size())
               ? QStringLiteral("\nErrors\n")
               : QStringLiteral("\nErrors (%1, %2 different)\n").arg(errors.size()).arg(groups.size());
    if (errors.isEmpty())
        out += QStringLiteral("  none found\n");
    for (const Repeats<LogError>& repeats : groups) {
        const LogError& e = *repeats.first;
        out += QStringLiteral("  %1:%2%3: %4\n")
                   .arg(e.file)
                   .arg(e.line)
                   .arg(e.rank >= 0 ? QStringLiteral(" rank %1").arg(e.rank) : QString(), QString::fromUtf8(e.text));
        if (repeats.again.empty())
            continue;
        QVector<int> ranks;
        bool otherFile = false;
        for (const LogError* again : repeats.again) {
            if (again->rank >= 0)
                ranks.append(again->rank);
            otherFile = otherFile || again->file != e.file;
        }
        // "lines 24, 28" within the first's file; "a.log:24, b.log:24" across files.
        QStringList shown;
        for (size_t i = 0; i < std::min(repeats.again.size(), kPlacesShown); ++i)
            shown << (otherFile ? QStringLiteral("%1:%2").arg(repeats.again[i]->file).arg(repeats.again[i]->line)
                                : QString::number(repeats.again[i]->line));
        QString places = shown.join(QStringLiteral(", "));
        if (repeats.again.size() > kPlacesShown)
            places += QStringLiteral(", …");
        out += QStringLiteral("    and %1%2: %3%4\n")
                   .arg(moreTimes(static_cast<qsizetype>(repeats.again.size())),
                        ranks.isEmpty() ? QString() : QStringLiteral(" on rank(s) %1").arg(formatRankList(ranks)),
                        otherFile                   ? QString()
                        : repeats.again.size() == 1 ? QStringLiteral("line ")
                                                    : QStringLiteral("lines "),
                        places);
    }
}

} // namespace

QString formatInspectionText(const LogInspection& inspection) {
    QString out;
    appendNccl(out, inspection.nccl);
    appendTimeouts(out, inspection.timeouts);
    appendFailures(out, inspection.failures);
    appendGpus(out, inspection.gpus);
    appendErrors(out, inspection.errors);
    return out;
}

namespace {

// "-": standard input (a pipe from `kubectl logs`, `journalctl`), read as a file is.
std::optional<QString> inspectStandardInput(LogInspector& inspector) {
    QFile in;
    if (!in.open(stdin, QIODevice::ReadOnly))
        return QStringLiteral("-: %1").arg(in.errorString());
    return inspector.inspectDevice(in, QStringLiteral("-"));
}

} // namespace

int runInspectCommand(const QStringList& paths, bool json) {
    // A file that cannot be read is named and the exit status says so, but what the others hold is still shown.
    LogInspector inspector;
    bool unreadable = false;
    for (const QString& path : paths) {
        if (const auto error =
                path == QLatin1String("-") ? inspectStandardInput(inspector) : inspector.inspectFile(path)) {
            QTextStream(stderr) << "rankscope-cli inspect: " << *error << '\n';
            unreadable = true;
        }
    }
    const LogInspection inspection = inspector.result();
    if (json) {
        const QByteArray bytes = inspectionToJson(inspection);
        std::fwrite(bytes.constData(), 1, static_cast<size_t>(bytes.size()), stdout);
    } else {
        QTextStream(stdout) << formatInspectionText(inspection);
    }
    return unreadable ? kExitUsage : kExitOk;
}

} // namespace rankscope::cli
