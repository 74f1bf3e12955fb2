// SPDX-License-Identifier: MIT
#pragma once

#include "core/kernellog.h"
#include "core/runstore.h"

#include <QHash>
#include <QObject>
#include <QSet>

namespace rankscope::remote {

class NodeWorker;

struct KernelLogWatchOptions {
    int timeoutSeconds = 10;       // per attempt (dmesg --time-format iso, dmesg, journalctl -k)
    qint64 maxBytes = 1 << 20;     // the newest bytes kept of what the node printed
    double sinceSlackSeconds = 60; // journalctl reads from this long before the run was created
};

// Reads the kernel log of a node whose rank died by a signal without an error of its own (the OOM killer's
// SIGKILL above all), once per node per run, on that node's worker thread (NodeWorker::readKernelLog: only
// queued calls and signals cross); saves what was read, or why nothing could be, in the run store
// (runs/ID/kernel-nodeN.json) and hands it on for the diagnosis. The engine finishes a run only once no read is
// pending, so that the root cause can say what the kernel said.
class KernelLogWatch final : public QObject {
    Q_OBJECT

public:
    explicit KernelLogWatch(RunStore* store, KernelLogWatchOptions options = {}, QObject* parent = nullptr);

    void reset();                    // a new run: answers to an earlier run's requests are dropped
    void follow(NodeWorker* worker); // takes this worker's answers
    // Rank `rank` of `record` ended with `status`, and `ownError` says whether it reported an error of its own.
    // Asks `worker` (the rank's node's) when that was a signal, no error came with it, and the node's log was not
    // asked for yet in this run.
    void rankDied(const RunRecord& record, int rank, int status, bool ownError, NodeWorker* worker);
    [[nodiscard]] bool pending() const { return !m_pending.isEmpty(); }

signals:
    void captured(const rankscope::KernelLogCapture& capture); // saved in the run store
    void settled();                                            // the last pending read came in

private:
    void take(int node, int job, KernelLogCapture capture);

    RunStore* m_store;
    KernelLogWatchOptions m_options;
    QString m_runId;
    int m_job = 0;
    QSet<int> m_asked;           // nodes asked in this run
    QSet<int> m_pending;         // nodes whose answer is still to come
    QHash<int, QString> m_hosts; // the node's host as the run record names it
};

} // namespace rankscope::remote
