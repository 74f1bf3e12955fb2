// SPDX-License-Identifier: MIT
#include "remote/kernellogwatch.h"

#include "remote/nodeworker.h"

namespace rankscope::remote {

KernelLogWatch::KernelLogWatch(RunStore* store, KernelLogWatchOptions options, QObject* parent)
    : QObject(parent), m_store(store), m_options(options) {
    qRegisterMetaType<KernelLogCapture>();
}

void KernelLogWatch::reset() {
    ++m_job;
    m_runId.clear();
    m_asked.clear();
    m_pending.clear();
    m_hosts.clear();
}

void KernelLogWatch::follow(NodeWorker* worker) {
    connect(worker, &NodeWorker::kernelLogRead, this, &KernelLogWatch::take);
}

void KernelLogWatch::rankDied(const RunRecord& record, int rank, int status, bool ownError, NodeWorker* worker) {
    const int node = record.nodeOfRank(rank);
    if (RankExit{status, {}}.signal() == 0 || ownError || !worker || node < 0 || m_asked.contains(node))
        return;
    if (m_runId != record.id) { // the first death of this run
        reset();
        m_runId = record.id;
    }
    m_asked.insert(node);
    m_pending.insert(node);
    m_hosts.insert(node, record.nodes[node].host);
    const double since = record.created.isValid()
                             ? static_cast<double>(record.created.toSecsSinceEpoch()) - m_options.sinceSlackSeconds
                             : kUnknownTime;
    const int job = m_job;
    const KernelLogWatchOptions options = m_options;
    QMetaObject::invokeMethod(
        worker,
        [worker, job, since, options] { worker->readKernelLog(job, since, options.timeoutSeconds, options.maxBytes); },
        Qt::QueuedConnection);
}

void KernelLogWatch::take(int node, int job, KernelLogCapture capture) {
    if (job != m_job || !m_pending.remove(node))
        return; // another run's
    capture.node = node;
    capture.host = m_hosts.value(node, capture.host);
    QString error;
    if (m_store->saveKernelLog(m_runId, capture, &error).isEmpty())
        qWarning("rankscope: %s", qPrintable(error));
    emit captured(capture);
    if (m_pending.isEmpty())
        emit settled();
}

} // namespace rankscope::remote
