// SPDX-License-Identifier: MIT
// The log classifier on lines as real jobs print them (NCCL and PyTorch samples from public issue
// threads, see tests/data/README.md, and the trainer's own output recorded under tests/data/logs/).
#include "core/logclassify.h"

#include <QFile>
#include <QtTest>

using rankscope::classifyLogLine;
using rankscope::LogSeverity;

Q_DECLARE_METATYPE(rankscope::LogSeverity)

class TestLogClassify final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void processPrefix_data() {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("identity");
        QTest::newRow("nccl") << "node-a:1234:1290 [3] NCCL INFO Using network Socket" << "NCCL INFO Using network Socket";
        QTest::newRow("trainer") << "[rank 3] epoch 1/2 step 20/469" << "epoch 1/2 step 20/469";
        QTest::newRow("torchrun") << "[rank12]: Traceback (most recent call last):" << "Traceback (most recent call last):";
        QTest::newRow("plain") << "Epoch 1 done" << "Epoch 1 done";
        QTest::newRow("time is not a host") << "10:00:00 [x] started" << "10:00:00 [x] started";
        QTest::newRow("long bracket kept") << "a:b:c [0123456789] x" << "a:b:c [0123456789] x";
        QTest::newRow("a time with words is no host") << "at 10:00:00 [3] restarted"
                                                      << "at 10:00:00 [3] restarted";
        QTest::newRow("a long bracket is no rank") << "[rankscope-monitor-process] up"
                                                   << "[rankscope-monitor-process] up";
    }
    void processPrefix() {
        QFETCH(QString, line);
        QFETCH(QString, identity);
        QCOMPARE(rankscope::withoutProcessPrefix(line).toString(), identity);
    }

    void classifies_data() {
        QTest::addColumn<QString>("line");
        QTest::addColumn<LogSeverity>("severity");
        QTest::addColumn<bool>("nccl");

        QTest::newRow("nccl info") << "ai:480850:480850 [0] NCCL INFO Bootstrap : Using eth0:162.30.2.40<0>"
                                   << LogSeverity::Info << true;
        QTest::newRow("nccl warn")
            << "ai:480850:480850 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]"
            << LogSeverity::Warning << true;
        QTest::newRow("nccl trace") << "h:1:2 [3] NCCL TRACE ring 0" << LogSeverity::Debug << true;
        QTest::newRow("nccl version") << "NCCL version 2.10.3+cuda11.3" << LogSeverity::Info << true;
        QTest::newRow("mpirun prefix") << "[1,2]<stdout>:node:102986:102997 [0] NCCL INFO Using network IB"
                                       << LogSeverity::Info << true;
        QTest::newRow("c10 error")
            << "[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout"
            << LogSeverity::Error << true;
        QTest::newRow("c10 warning") << "[W socket.cpp:601] [c10d] The client socket has failed to connect."
                                     << LogSeverity::Warning << false;
        QTest::newRow("c10 rank prefix")
            << "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective"
            << LogSeverity::Error << true;
        QTest::newRow("glog error") << "E1122 10:00:00.123456 4242 store.cpp:12] connect failed" << LogSeverity::Error
                                    << false;
        QTest::newRow("glog info with ERROR option")
            << "I0719 10:50:33.485718 219407 ProcessGroupNCCL.cpp:482] [Rank 3] NCCL_ASYNC_ERROR_HANDLING: 0"
            << LogSeverity::Info << true;
        QTest::newRow("glog warning") << "W0719 10:50:33.1 1 file.cc:1] slow" << LogSeverity::Warning << false;
        QTest::newRow("glog fatal") << "F0719 10:50:33.1 1 file.cc:1] check failed" << LogSeverity::Fatal << false;
        QTest::newRow("traceback") << "Traceback (most recent call last):" << LogSeverity::Error << false;
        QTest::newRow("python error") << "RuntimeError: CUDA out of memory." << LogSeverity::Error << false;
        QTest::newRow("dotted error") << "torch.distributed.DistBackendError: NCCL error in: ..." << LogSeverity::Error
                                      << true;
        QTest::newRow("exception") << "ChildFailedError:" << LogSeverity::Error << false;
        QTest::newRow("python warning class") << "UserWarning: this is deprecated" << LogSeverity::Warning << false;
        QTest::newRow("terminate") << "terminate called after throwing an instance of 'c10::DistBackendError'"
                                   << LogSeverity::Fatal << false;
        QTest::newRow("segfault") << "Segmentation fault (core dumped)" << LogSeverity::Fatal << false;
        QTest::newRow("logging warning") << "WARNING:torch.distributed.run:Setting OMP_NUM_THREADS"
                                         << LogSeverity::Warning << false;
        QTest::newRow("logging error") << "ERROR:root:failed" << LogSeverity::Error << false;
        QTest::newRow("ERROR inside") << "  something ERROR happened" << LogSeverity::Error << false;
        QTest::newRow("trainer error") << "[rank 1] error: injected failure at step 3 (--fail-at-step)"
                                       << LogSeverity::Error << false;
        QTest::newRow("trainer progress")
            << "[rank 0] epoch 1/1 step 1/8 loss 2.2317 783 img/s" << LogSeverity::Info << false;
        QTest::newRow("error word in plain text") << "no errors so far" << LogSeverity::Info << false;
        QTest::newRow("identifier ending in Error") << "handleError(x) returned" << LogSeverity::Info << false;
        QTest::newRow("event") << R"(@rankscope {"v":"1.0","type":"step","rank":0})" << LogSeverity::Debug << false;
        QTest::newRow("error event") << R"(@rankscope {"v":"1.0","type":"error","rank":0,"kind":"NCCL"})"
                                     << LogSeverity::Error << false;
        QTest::newRow("empty") << "" << LogSeverity::Info << false;
        // What only looks like a level, a prefix or a class.
        QTest::newRow("a word that starts with ERROR") << "metric ERRORS_TOTAL=0" << LogSeverity::Info << false;
        QTest::newRow("a level word that goes on") << "ERRORS: 0" << LogSeverity::Info << false;
        QTest::newRow("a letter and a space is no glog level") << "E = m c^2" << LogSeverity::Info << false;
        QTest::newRow("NCCL inside a name") << "MY_NCCL WARN_LEVEL=2 set" << LogSeverity::Info << true;
        QTest::newRow("a long bracket is no source")
            << "[abcdefghijklmnopqrstuvwxyz0]:Traceback (most recent call last):" << LogSeverity::Info << false;
        QTest::newRow("a c10 level before a colon is no source")
            << "[W init.cpp:12]: slow" << LogSeverity::Warning << false;
        // And what is one.
        QTest::newRow("mpirun's stream tag")
            << "[1,0]<stderr>:Traceback (most recent call last):" << LogSeverity::Error << false;
        QTest::newRow("nccl abort") << "h:1:2 [0] NCCL ABORT comm 0x55" << LogSeverity::Error << true;
        QTest::newRow("keyboard interrupt") << "KeyboardInterrupt" << LogSeverity::Error << false;
        QTest::newRow("core dumped") << "Aborted (core dumped)" << LogSeverity::Fatal << false;
        QTest::newRow("Error: inside") << "step 3 failed with Error: disk full" << LogSeverity::Error << false;
        QTest::newRow("WARN inside") << "2024-01-01 12:00 [WARN] low disk" << LogSeverity::Warning << false;
    }

    void classifies() {
        QFETCH(QString, line);
        QFETCH(LogSeverity, severity);
        QFETCH(bool, nccl);
        const auto traits = classifyLogLine(line);
        QCOMPARE(int(traits.severity), int(severity));
        QCOMPARE(traits.nccl, nccl);
    }

    // Every line of the public NCCL samples is NCCL output; its WARN lines are warnings and the watchdog's
    // "[E ...]" lines errors.
    void publicNcclSamples() {
        QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/logs/nccl-public-samples.log"));
        QVERIFY(file.open(QIODevice::ReadOnly | QIODevice::Text));
        int warnings = 0;
        int errors = 0;
        while (!file.atEnd()) {
            const QString line = QString::fromUtf8(file.readLine()).trimmed();
            if (line.isEmpty() || line.startsWith(u'#'))
                continue;
            const auto traits = classifyLogLine(line);
            QVERIFY2(traits.nccl, qPrintable(line));
            if (line.contains(u"NCCL WARN")) {
                QCOMPARE(int(traits.severity), int(LogSeverity::Warning));
                ++warnings;
            } else if (line.contains(u":[E") || line.startsWith(u"[E ")) {
                QCOMPARE(int(traits.severity), int(LogSeverity::Error));
                ++errors;
            } else {
                QCOMPARE(int(traits.severity), int(LogSeverity::Info));
            }
        }
        QVERIFY(warnings > 0);
        QVERIFY(errors > 0);
    }

    // The trainer's recorded stderr: progress is info, the injected failure an error.
    void recordedTrainerStderr() {
        QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/logs/trainer-fail-rank1.err"));
        QVERIFY(file.open(QIODevice::ReadOnly | QIODevice::Text));
        QVector<LogSeverity> severities;
        while (!file.atEnd())
            severities.append(classifyLogLine(QString::fromUtf8(file.readLine()).trimmed()).severity);
        QCOMPARE(severities.size(), 3);
        QCOMPARE(int(severities[0]), int(LogSeverity::Info));
        QCOMPARE(int(severities[2]), int(LogSeverity::Error));
    }
};

QTEST_GUILESS_MAIN(TestLogClassify)
#include "tst_logclassify.moc"
