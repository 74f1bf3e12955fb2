// SPDX-License-Identifier: MIT
#include "tailreaders.h"

#include "remote/shellcommand.h"

#include <QProcess>
#include <QThread>

#include <cstdlib>
#include <fcntl.h>
#include <string_view>
#include <unistd.h>

namespace rankscope::bench {

namespace {

constexpr qint64 kChunk = 1 << 20;

// The number after "time": in an event line; 0 when there is none.
double eventTimeMs(const char* begin, const char* end) {
    static constexpr char kKey[] = "\"time\":";
    const std::string_view line(begin, size_t(end - begin));
    const size_t at = line.find(kKey);
    if (at == std::string_view::npos)
        return 0;
    return std::strtod(begin + at + sizeof(kKey) - 1, nullptr) * 1000.0;
}

class LocalTail final : public TailReader {
public:
    LocalTail(const QString& runDir, const QVector<int>& ranks, int pollMs) : m_pollMs(pollMs) {
        for (const int rank : ranks)
            for (const bool events : {false, true}) {
                File file;
                file.path = runDir + QStringLiteral("/rank%1.%2").arg(rank).arg(events ? "events" : "out");
                file.events = events;
                m_files.push_back(std::move(file));
            }
        start();
    }
    ~LocalTail() override {
        stop();
        for (File& file : m_files)
            if (file.fd >= 0)
                ::close(file.fd);
    }

private:
    struct File {
        QString path;
        bool events = false;
        int fd = -1;
        qint64 offset = 0;
        QByteArray partial;
    };

    void follow() override {
        m_readyMs = wallMs();
        QByteArray buffer(kChunk, Qt::Uninitialized);
        for (bool last = false; !last;) {
            last = m_stop.load(); // one more pass after stop(): every byte written before it is read
            for (File& file : m_files)
                readAll(file, buffer);
            if (!last)
                QThread::msleep(static_cast<unsigned long>(m_pollMs));
        }
    }

    void readAll(File& file, QByteArray& buffer) {
        if (file.fd < 0)
            file.fd = ::open(file.path.toLocal8Bit().constData(), O_RDONLY | O_CLOEXEC);
        if (file.fd < 0)
            return;
        for (;;) {
            const ssize_t got = ::pread(file.fd, buffer.data(), size_t(kChunk), file.offset);
            if (got <= 0)
                return;
            file.offset += got;
            consume(file.partial, QByteArray::fromRawData(buffer.constData(), qsizetype(got)), file.events, wallMs());
        }
    }

    int m_pollMs;
    std::vector<File> m_files;
};

class SshTail final : public TailReader {
public:
    SshTail(const OpensshTarget& target, const QString& runDir, const QVector<int>& ranks) : m_target(target) {
        QStringList files;
        for (const int rank : ranks)
            files << remote::shellQuote(runDir + QStringLiteral("/rank%1.events").arg(rank));
        // tail is started once every file exists (on a missing file GNU tail falls back to polling once a
        // second); -q: no "==> file <==" headers.
        m_command = QStringLiteral("for f in %1; do until [ -e \"$f\" ]; do sleep 0.01; done; done; echo ready; "
                                   "exec tail -q -n +1 -F -s 0.01 %1 2>/dev/null")
                        .arg(files.join(QLatin1Char(' ')));
        start();
    }
    ~SshTail() override { stop(); }

private:
    void follow() override {
        QProcess ssh;
        ssh.start(QStringLiteral("ssh"), sshArguments(m_target, m_command));
        QByteArray partial;
        bool ready = false;
        // After stop(): drain what is still on its way, until the stream is quiet for half a second.
        while (ssh.state() != QProcess::NotRunning) {
            const bool stopping = m_stop.load();
            if (!ssh.waitForReadyRead(stopping ? 500 : 50)) {
                if (stopping)
                    break;
                continue;
            }
            const double now = wallMs();
            QByteArray bytes = ssh.readAllStandardOutput();
            if (!ready) {
                partial += bytes;
                const qsizetype end = partial.indexOf("ready\n");
                if (end < 0)
                    continue;
                ready = true;
                m_readyMs = now;
                bytes = partial.mid(end + 6);
                partial.clear();
            }
            consume(partial, bytes, true, now);
        }
        ssh.kill();
        ssh.waitForFinished(5000);
    }

    OpensshTarget m_target;
    QString m_command;
};

} // namespace

TailReader::~TailReader() = default;

void TailReader::start() {
    m_thread.reset(QThread::create([this] { follow(); }));
    m_thread->start();
}

void TailReader::stop() {
    if (!m_thread)
        return;
    m_stop = true;
    m_thread->wait();
    m_thread.reset();
}

TailReader::Counts TailReader::counts() const {
    const QMutexLocker lock(&m_mutex);
    return m_counts;
}

void TailReader::consume(QByteArray& partial, const QByteArray& bytes, bool events, double now) {
    partial += bytes;
    qint64 lines = 0;
    QVector<double> times;
    const char* data = partial.constData();
    qsizetype begin = 0;
    for (qsizetype end; (end = partial.indexOf('\n', begin)) >= 0; begin = end + 1) {
        ++lines;
        if (events && partial.sliced(begin, end - begin).contains("\"type\":\"step\""))
            times.append(eventTimeMs(data + begin, data + end));
    }
    partial.remove(0, begin);
    const QMutexLocker lock(&m_mutex);
    if (!events)
        m_counts.logLines += lines;
    m_counts.stepEvents += times.size();
    m_counts.eventMs += times;
    m_counts.arrivedMs.insert(m_counts.arrivedMs.size(), times.size(), now);
}

std::unique_ptr<TailReader> startLocalTail(const QString& runDir, const QVector<int>& ranks, int pollMs) {
    return std::make_unique<LocalTail>(runDir, ranks, pollMs);
}

std::unique_ptr<TailReader> startSshTail(const OpensshTarget& target, const QString& runDir,
                                         const QVector<int>& ranks) {
    return std::make_unique<SshTail>(target, runDir, ranks);
}

} // namespace rankscope::bench
