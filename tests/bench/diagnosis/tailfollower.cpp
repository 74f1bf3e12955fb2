// SPDX-License-Identifier: MIT
#include "tailfollower.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <chrono>

namespace rankscope::bench {

double wallSeconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TailFollower::TailFollower(const QStringList& files, int ranks) : m_ranks(ranks) {
    for (const QString& file : files)
        m_threads.emplace_back([this, file] { follow(file); });
}

TailFollower::~TailFollower() {
    m_stop = true;
    for (std::thread& thread : m_threads)
        thread.join();
}

TailFollower::Seen TailFollower::seen() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_seen;
}

void TailFollower::follow(const QString& file) {
    // -F: by name, retrying until the rank creates its file; from its first line. GNU tail uses inotify on a
    // local file; the sleep interval is for when it cannot.
    QProcess tail;
    tail.setStandardErrorFile(QProcess::nullDevice());
    tail.start(QStringLiteral("tail"), {QStringLiteral("-n"), QStringLiteral("+1"), QStringLiteral("-F"),
                                        QStringLiteral("--sleep-interval=0.02"), file});
    if (!tail.waitForStarted())
        return;
    QByteArray pending;
    while (!m_stop && tail.state() == QProcess::Running) {
        if (!tail.waitForReadyRead(50))
            continue;
        const double now = wallSeconds();
        pending += tail.readAllStandardOutput();
        for (qsizetype end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
            take(pending.left(end), now);
            pending.remove(0, end + 1);
        }
    }
    tail.kill();
    tail.waitForFinished();
}

int TailFollower::count(bool RankView::*flag) const {
    int n = 0;
    for (const RankView& view : m_views)
        n += view.*flag ? 1 : 0;
    return n;
}

void TailFollower::take(const QByteArray& line, double now) {
    if (!line.startsWith("@rankscope "))
        return;
    const QJsonObject event = QJsonDocument::fromJson(line.mid(11)).object();
    const QString type = event.value(QStringLiteral("type")).toString();
    const int rank = event.value(QStringLiteral("rank")).toInt(-1);
    if (rank < 0)
        return;
    std::lock_guard<std::mutex> lock(m_mutex);
    RankView& view = m_views[rank];
    if (type == QLatin1String("heartbeat")) {
        const qint64 step = event.value(QStringLiteral("step")).toInteger();
        const QByteArray beat =
            QByteArray::number(step) + ' ' + event.value(QStringLiteral("phase")).toString().toUtf8() + ' ' +
            QByteArray::number(event.value(QStringLiteral("collective_started")).toInteger()) + ' ' +
            QByteArray::number(event.value(QStringLiteral("collective_finished")).toInteger());
        view.still = step >= 1 && beat == view.lastBeat;
        view.lastBeat = beat;
        if (m_seen.allStill == 0.0 && count(&RankView::still) == m_ranks)
            m_seen.allStill = now;
    } else if (type == QLatin1String("error") && event.value(QStringLiteral("fatal")).toBool(true)) {
        if (m_seen.firstError == 0.0) {
            m_seen.firstError = now;
            m_seen.firstErrorRank = rank;
        }
    } else if (type == QLatin1String("end")) {
        view.ended = true;
        if (m_seen.allEnded == 0.0 && count(&RankView::ended) == m_ranks)
            m_seen.allEnded = now;
    }
}

} // namespace rankscope::bench
