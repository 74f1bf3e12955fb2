// SPDX-License-Identifier: MIT
// Native stacks: gdb's and eu-stack's output parsed, merged across ranks into the parallel-stacks tree,
// wait frames labelled, and the tree through JSON and back. The gloo-hang files are real gdb output of a
// hung 2-rank trainer (tests/data/README.md says how they were recorded).
#include "core/ranklist.h"
#include "core/stacks.h"

#include <QFile>
#include <QTest>

using namespace rankscope;

namespace {

QByteArray data(const QString& name) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/stacks/") + name);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("missing test data %s", qPrintable(name));
    return file.readAll();
}

StackTree hungGlooTree() {
    StackTree tree;
    tree.addRank(0, parseStacks(data(QStringLiteral("gloo-hang-rank0.gdb.txt"))));
    tree.addRank(1, parseStacks(data(QStringLiteral("gloo-hang-rank1.gdb.txt"))));
    return tree;
}

// One thread's stack from its functions, innermost first; a function "??@lib" is a frame without a symbol in lib,
// "f@file:line" one with a location.
ProcessStacks oneThread(const QStringList& innermostFirst) {
    ThreadStack stack;
    for (const QString& text : innermostFirst) {
        StackFrame frame{text.section(QLatin1Char('@'), 0, 0), {}, 0, {}, false};
        const QString at = text.section(QLatin1Char('@'), 1);
        if (frame.function == QLatin1String("??"))
            frame.library = at;
        else if (!at.isEmpty()) {
            frame.file = at.section(QLatin1Char(':'), 0, 0);
            frame.line = at.section(QLatin1Char(':'), 1).toInt();
        }
        stack.frames.append(frame);
    }
    return ProcessStacks{1, {stack}};
}

} // namespace

class tst_Stacks final : public QObject {
    Q_OBJECT

private slots:
    void frames_data() {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("function");
        QTest::addColumn<QString>("location");
        QTest::addColumn<QString>("library");
        QTest::addColumn<bool>("inlined");
        QTest::newRow("address, args, file") << "0x00007fa5d80f1e53 in __GI___nanosleep (req=<optimized out>, "
                                                "rem=<optimized out>) at ../sysdeps/unix/sysv/linux/nanosleep.c:25"
                                             << "__GI___nanosleep" << "nanosleep.c:25" << "" << false;
        QTest::newRow("inlined") << "rankscope::trainer::(anonymous namespace)::Trainer::injectFaults "
                                    "(this=0x7ffebd7a27a0) at /work/main/trainer/src/training.cpp:295"
                                 << "rankscope::trainer::(anonymous namespace)::Trainer::injectFaults"
                                 << "training.cpp:295" << "" << true;
        QTest::newRow("signature, from lib")
            << "0x00007fa5dc66cac1 in c10d::ProcessGroupGloo::runLoop(int) () from "
               "/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"
            << "c10d::ProcessGroupGloo::runLoop" << "" << "libtorch_cpu.so.1.13" << false;
        QTest::newRow("no symbol") << "0x00007fa5d7ed44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6"
                                   << "??" << "" << "libstdc++.so.6" << false;
        QTest::newRow("const method") << "0x00007f7933f440e8 in at::Tensor::_backward(c10::ArrayRef<at::Tensor>, "
                                         "c10::optional<at::Tensor> const&) const () from /lib/libtorch_cpu.so"
                                      << "at::Tensor::_backward" << "" << "libtorch_cpu.so" << false;
        QTest::newRow("operator()") << "0x00005592717ad0be in operator() (__closure=0x55927f6e4a48) at "
                                       "/work/main/trainer/src/termination.cpp:20"
                                    << "operator()" << "termination.cpp:20" << "" << false;
        QTest::newRow("template with a function type")
            << "std::__invoke_impl<void, rankscope::trainer::handleTerminationSignals(std::function<void "
               "(int)>)::<lambda()> > (__f=...) at /usr/include/c++/12/bits/invoke.h:61"
            << "std::__invoke_impl<void, rankscope::trainer::handleTerminationSignals(std::function<void "
               "(int)>)::<lambda()> >"
            << "invoke.h:61" << "" << true;
        QTest::newRow("string argument with a parenthesis")
            << "0x0000000000401136 in log (text=0x402004 \"a (b\") at log.c:3" << "log" << "log.c:3" << "" << false;
        QTest::newRow("clone suffix") << "0x0000000000401136 in f(int) [clone .isra.0] () from /lib/x.so"
                                      << "f" << "" << "x.so" << false;
    }
    void frames() {
        QFETCH(QString, line);
        const ProcessStacks stacks = parseGdbStacks(QStringLiteral("#0  %1\n").arg(line).toUtf8());
        QCOMPARE(stacks.threads.size(), 1);
        QCOMPARE(stacks.threads[0].frames.size(), 1);
        const StackFrame& frame = stacks.threads[0].frames[0];
        QTEST(frame.function, "function");
        QTEST(frame.location(), "location");
        QTEST(frame.library, "library");
        QTEST(frame.inlined, "inlined");
    }

    void realGdbOutputMainThreadFirst() {
        const ProcessStacks rank1 = parseStacks(data(QStringLiteral("gloo-hang-rank1.gdb.txt")));
        QCOMPARE(rank1.pid, 21948);
        QCOMPARE(rank1.threads.size(), 7);
        QCOMPARE(rank1.threads[0].number, 1);
        QCOMPARE(rank1.threads[0].lwp, 21948);
        QCOMPARE(rank1.threads[0].name, QStringLiteral("rankscope-train"));
        QCOMPARE(rank1.threads[0].frames.size(), 9);
        QCOMPARE(rank1.threads[0].frames.back().function, QStringLiteral("main"));
        QCOMPARE(rank1.threads[0].frames[3].function,
                 QStringLiteral("rankscope::trainer::(anonymous namespace)::Trainer::injectFaults"));
        const ProcessStacks rank0 = parseStacks(data(QStringLiteral("gloo-hang-rank0.gdb.txt")));
        QCOMPARE(rank0.threads.size(), 8);
        QCOMPARE(rank0.threads[0].frames[5].function, QStringLiteral("c10d::Reducer::finalize_backward"));
    }

    void waitLabels_data() {
        QTest::addColumn<QString>("function");
        QTest::addColumn<QString>("label");
        QTest::newRow("gloo recv") << "gloo::transport::tcp::UnboundBuffer::waitRecv" << "gloo wait";
        QTest::newRow("gloo loop") << "gloo::transport::tcp::Loop::run" << "";
        QTest::newRow("nccl work") << "c10d::ProcessGroupNCCL::WorkNCCL::wait" << "c10d wait";
        QTest::newRow("gloo work") << "c10d::ProcessGroupGloo::AsyncWork::wait" << "c10d wait";
        QTest::newRow("store") << "c10d::TCPStore::doWait" << "c10d wait";
        QTest::newRow("reducer") << "c10d::Reducer::finalize_backward" << "c10d wait";
        QTest::newRow("idle gloo worker") << "c10d::ProcessGroupGloo::runLoop" << "";
        QTest::newRow("nccl group") << "ncclGroupEnd" << "nccl wait";
        QTest::newRow("nccl proxy") << "ncclProxyProgress" << "nccl wait";
        QTest::newRow("sleep_for") << "std::this_thread::sleep_for<long, std::ratio<3600l, 1l> >" << "sleep";
        QTest::newRow("nanosleep") << "__GI___clock_nanosleep" << "sleep";
        QTest::newRow("nccl barrier") << "c10d::ProcessGroupNCCL::barrier"
                                      << "c10d wait";
        QTest::newRow("store get") << "c10d::PrefixStore::get"
                                   << "c10d wait";
        QTest::newRow("work synchronize") << "c10d::ProcessGroupNCCL::WorkNCCL::synchronize"
                                          << "c10d wait";
        QTest::newRow("torch's nccl") << "torch::cuda::nccl::all_reduce"
                                      << "nccl wait";
        QTest::newRow("a name with sleep in it") << "worker::sleeping"
                                                 << "";
        QTest::newRow("other") << "main" << "";
    }
    void waitLabels() {
        QFETCH(QString, function);
        QTEST(waitKindName(classifyWaitFrame(function)), "label");
    }

    void hungRankStandsApart() {
        const StackTree tree = hungGlooTree();
        QCOMPARE(tree.ranks(), (QVector<int>{0, 1}));
        // The main threads lead: the first root child is `main`, shared by both ranks.
        QCOMPARE(tree.root().children.front().function, QStringLiteral("main"));
        QCOMPARE(tree.root().children.front().ranks(), (QVector<int>{0, 1}));
        const auto inject = tree.find(QStringLiteral("injectFaults"));
        QCOMPARE(inject.size(), 1);
        QCOMPARE(inject.front()->ranks(), QVector<int>{1});
        const auto reducer = tree.find(QStringLiteral("finalize_backward"));
        QCOMPARE(reducer.size(), 1);
        QCOMPARE(reducer.front()->ranks(), QVector<int>{0});
        QCOMPARE(reducer.front()->wait, WaitKind::C10d);
        const auto recv = tree.find(QStringLiteral("waitRecv"));
        QCOMPARE(recv.size(), 1);
        QCOMPARE(recv.front()->ranks(), QVector<int>{0});
        QCOMPARE(recv.front()->wait, WaitKind::Gloo);

        const QString text = tree.render();
        QVERIFY2(text.startsWith(QLatin1String("[ranks 0-1] main at main.cpp:49\n")), qPrintable(text));
        QVERIFY2(text.contains(QRegularExpression(
                     QStringLiteral("\\n +\\[rank 1\\] rankscope::trainer::\\(anonymous "
                                    "namespace\\)::Trainer::injectFaults at training.cpp:295\\n"))),
                 qPrintable(text));
        QVERIFY2(text.contains(QLatin1String("[rank 0] c10d::Reducer::finalize_backward  <-- c10d wait")),
                 qPrintable(text));
        QVERIFY2(text.contains(QLatin1String("[rank 1] std::this_thread::sleep_for<long, std::ratio<3600l, 1l> > at "
                                             "this_thread_sleep.h:80  <-- sleep")),
                 qPrintable(text));
        // Helper threads are kept: both ranks' Gloo worker loops, several threads per rank.
        QVERIFY2(text.contains(QLatin1String("[ranks 0-1: 4 threads] c10d::ProcessGroupGloo::runLoop")),
                 qPrintable(text));
        const QString mainOnly = tree.render(true);
        QVERIFY(!mainOnly.contains(QLatin1String("runLoop")));
        QVERIFY(mainOnly.contains(QLatin1String("injectFaults")));
    }

    // Below a labelled wait, the frames that the same threads share to the end (a sleep's nanosleep, a condition
    // variable's futex) are one line: how many, and the innermost. Where threads part below the label, or
    // without a label, every frame is printed; the tree itself keeps every frame.
    void waitChainsAreOneLine() {
        const StackTree hung = hungGlooTree();
        const QString text = hung.render();
        QVERIFY2(
            text.contains(QRegularExpression(QStringLiteral(
                "<-- sleep\\n +\\[rank 1\\] … 2 frames down to __GI___clock_nanosleep at clock_nanosleep.c:48\\n"))),
            qPrintable(text));
        QVERIFY2(!text.contains(QLatin1String("__GI___nanosleep")), qPrintable(text));
        QVERIFY(!hung.find(QStringLiteral("__GI___nanosleep")).isEmpty());
        QVERIFY2(hung.render(true).contains(QStringLiteral("[rank 1] … 2 frames down to __GI___clock_nanosleep")),
                 qPrintable(hung.render(true)));
        // Gloo's idle loop is no labelled wait: its condition variable's frames are all printed.
        QVERIFY2(text.contains(QRegularExpression(
                     QStringLiteral("ProcessGroupGloo::runLoop\\n +\\[ranks 0-1: 3 threads\\] ___pthread_cond_wait"))),
                 qPrintable(text));

        // Frames of a library of interest below the label (NCCL's, CUDA's driver) are printed, each.
        const QString nccl = [] {
            StackTree tree;
            tree.addRank(3, parseStacks(data(QStringLiteral("nccl-style-wrapped.gdb.txt"))));
            return tree.render();
        }();
        QVERIFY2(nccl.contains(QLatin1String("[rank 3] ?? (libnccl.so.2)")), qPrintable(nccl));

        // Two ranks in the same wait, parting below it: nothing is folded.
        const auto thread = [](const QStringList& innermostFirst) {
            ThreadStack stack;
            for (const QString& function : innermostFirst)
                stack.frames.append(StackFrame{function, {}, 0, {}, false});
            return ProcessStacks{1, {stack}};
        };
        StackTree parted;
        parted.addRank(0, thread({"__poll", "__inner_a", "gloo::transport::tcp::UnboundBuffer::waitRecv", "main"}));
        parted.addRank(1, thread({"__poll", "__inner_b", "gloo::transport::tcp::UnboundBuffer::waitRecv", "main"}));
        const QString partedText = parted.render();
        QVERIFY2(!partedText.contains(QLatin1String("frames down to")), qPrintable(partedText));
        QVERIFY2(partedText.contains(QLatin1String("[rank 0] __inner_a")) &&
                     partedText.contains(QLatin1String("[rank 1] __inner_b")),
                 qPrintable(partedText));
        // One frame below the label is printed as it is.
        StackTree one;
        one.addRank(0, thread({"__poll", "gloo::transport::tcp::UnboundBuffer::waitRecv", "main"}));
        QVERIFY2(one.render().endsWith(QLatin1String("  <-- gloo wait\n    [rank 0] __poll\n")),
                 qPrintable(one.render()));
        QCOMPARE(hung.helperThreads(), hung.root().threads.value(0) + hung.root().threads.value(1) - 2);
        QCOMPARE(one.helperThreads(), 0);
    }

    void wrappedLinesAndNccl() {
        const ProcessStacks stacks = parseStacks(data(QStringLiteral("nccl-style-wrapped.gdb.txt")));
        QCOMPARE(stacks.pid, 4100);
        QCOMPARE(stacks.threads.size(), 3);
        QCOMPARE(stacks.threads[0].lwp, 4100); // thread 1, printed last, is put first
        QCOMPARE(stacks.threads[0].frames.size(), 3);
        QCOMPARE(stacks.threads[0].frames[0].location(), QStringLiteral("TCPStore.cpp:1078")); // cut by a terminal
        QCOMPARE(stacks.threads[0].frames[1].location(), QStringLiteral("TCPStore.cpp:1061")); // wrapped by gdb
        StackTree tree;
        tree.addRank(3, stacks);
        QCOMPARE(tree.find(QStringLiteral("ncclGroupEnd")).front()->wait, WaitKind::Nccl);
        QCOMPARE(tree.find(QStringLiteral("WorkNCCL::wait")).front()->wait, WaitKind::C10d);
        QCOMPARE(tree.find(QStringLiteral("TCPStore::wait")).front()->wait, WaitKind::C10d);
        const QString text = tree.render();
        QVERIFY2(text.contains(QLatin1String("[rank 3] ?? (libnccl.so.2)")), qPrintable(text));
        QVERIFY2(text.contains(QLatin1String("[rank 3] ?? (libcuda.so.1)")), qPrintable(text));
    }

    // Without the process id (no "Attaching to process", no "(process N)") and threads without an LWP, the main
    // thread is gdb's thread 1, though gdb prints it last.
    void withoutAPidThreadOneIsTheMainThread() {
        const ProcessStacks stacks = parseGdbStacks("Thread 2 (Thread 0x7f0000000700):\n"
                                                    "#0  0x00007f00000001 in __poll () from /lib/libc.so.6\n"
                                                    "#1  0x00007f00000002 in helperLoop () from /lib/libx.so\n"
                                                    "\n"
                                                    "Thread 1 (Thread 0x7f0000000800):\n"
                                                    "#0  0x00007f00000003 in runStep () at train.cpp:12\n"
                                                    "#1  0x00007f00000004 in main () at main.cpp:5\n");
        QCOMPARE(stacks.pid, 0);
        QCOMPARE(stacks.threads.size(), 2);
        QCOMPARE(stacks.threads[0].number, 1);
        QCOMPARE(stacks.threads[0].frames.front().function, QStringLiteral("runStep"));
    }

    void euStack() {
        const ProcessStacks stacks = parseStacks(data(QStringLiteral("sleep.eu-stack.txt")));
        QCOMPARE(stacks.pid, 5100);
        QCOMPARE(stacks.threads.size(), 2);
        QCOMPARE(stacks.threads[0].lwp, 5100);
        QCOMPARE(stacks.threads[0].frames[0].function, QStringLiteral("__GI___clock_nanosleep"));
        QCOMPARE(stacks.threads[0].frames[0].location(), QStringLiteral("clock_nanosleep.c:48"));
        QCOMPARE(stacks.threads[0].frames[2].location(), QStringLiteral("sleep.cc:6"));
        QCOMPARE(stacks.threads[1].frames.size(), 4);
    }

    void captureErrors_data() {
        QTest::addColumn<QByteArray>("out");
        QTest::addColumn<QByteArray>("err");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("expected");
        QTest::newRow("ok") << data(QStringLiteral("gloo-hang-rank1.gdb.txt")) << QByteArray() << 0 << "";
        QTest::newRow("ptrace denied") << QByteArray()
                                       << data(QStringLiteral("ptrace-denied.gdb.err")) + "rankscope-ptrace-scope=2\n"
                                       << 0 << "ptrace not permitted (kernel.yama.ptrace_scope = 2";
        QTest::newRow("gone") << QByteArray() << data(QStringLiteral("process-gone.gdb.err")) << 0
                              << "the process is gone";
        QTest::newRow("script") << QByteArray() << QByteArray("rankscope: neither gdb nor eu-stack on the node\n")
                                << 3 << "neither gdb nor eu-stack on the node";
        QTest::newRow("timeout") << QByteArray() << QByteArray() << 124 << "the debugger did not finish in time";
        QTest::newRow("nothing") << QByteArray("garbage\n") << QByteArray("boom\n") << 1
                                 << "no stack in the debugger's output (exit 1: boom)";
        QTest::newRow("nothing, after the markers")
            << QByteArray("garbage\n") << QByteArray("rankscope-process-state=S rankscope-pid=42\nboom\n") << 1
            << "no stack in the debugger's output (exit 1: boom)";
    }
    void captureErrors() {
        QFETCH(QByteArray, out);
        QFETCH(QByteArray, err);
        QFETCH(int, status);
        QFETCH(QString, expected);
        const QString error = stackCaptureError(out, err, status);
        QVERIFY2(expected.isEmpty() ? error.isEmpty() : error.startsWith(expected), qPrintable(error));
    }

    // The capture command says the process's state before the debugger: a rank stopped by a signal is named so,
    // with how to resume it; one running, sleeping or in a tracing stop of its own debugger is not (but the last).
    void captureNotes_data() {
        QTest::addColumn<QByteArray>("err");
        QTest::addColumn<QString>("expected");
        QTest::newRow("sleeping") << QByteArray("rankscope-process-state=S rankscope-pid=42\n") << QString();
        QTest::newRow("running") << QByteArray("rankscope-process-state=R rankscope-pid=42\n") << QString();
        QTest::newRow("no marker (older node script)") << QByteArray("warning: something\n") << QString();
        QTest::newRow("stopped") << QByteArray("warning: x\nrankscope-process-state=T rankscope-pid=42\n")
                                 << QStringLiteral("its process (pid 42) was stopped by a signal before the capture "
                                                   "(state T: SIGSTOP, or SIGTSTP from Ctrl-Z in the terminal that "
                                                   "started it), and is left so: kill -CONT 42 resumes it");
        QTest::newRow("traced") << QByteArray("rankscope-process-state=t rankscope-pid=7\n")
                                << QStringLiteral(
                                       "its process (pid 7) was stopped by a debugger that traces it (state t)");
    }
    void captureNotes() {
        QFETCH(QByteArray, err);
        QFETCH(QString, expected);
        QCOMPARE(stackCaptureNote(err), expected);
    }

    // A node's capture of several ranks at once frames each rank's streams by size: what a debugger prints (even a
    // line that looks like a header) is kept byte for byte; a rank whose three streams are not all there whole is
    // missing rather than half read.
    void splitCaptures_data() {
        const auto framed = [](int index, const QByteArray& out, const QByteArray& err, const QByteArray& rc) {
            QByteArray text;
            for (const auto& [stream, bytes] : {std::pair{"out", out}, std::pair{"err", err}, std::pair{"rc", rc}})
                text += QByteArray("rankscope-capture ") + QByteArray::number(index) + ' ' + stream + ' ' +
                        QByteArray::number(bytes.size()) + '\n' + bytes;
            return text;
        };
        const QByteArray gdb0("Thread 1 (LWP 5):\n#0  main () at main.cpp:49\n");
        const QByteArray lookalike("rankscope-capture 0 out 3\nabc"); // a debugger's output, not a header
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<int>("count");
        QTest::addColumn<QStringList>("expected"); // "out|err|status" per index, "-" for none

        QTest::newRow("two ranks") << framed(0, gdb0, "rankscope-pid=5\n", "0\n") + framed(1, "", "gone\n", "3\n") << 2
                                   << QStringList{QString::fromUtf8(gdb0) + "|rankscope-pid=5\n|0", "|gone\n|3"};
        QTest::newRow("a header in the output is content")
            << framed(0, lookalike, "", "0\n") << 1 << QStringList{QString::fromUtf8(lookalike) + "||0"};
        QTest::newRow("chatter before the first header")
            << QByteArray("motd\n") + framed(0, "x", "y", "124") << 1 << QStringList{"x|y|124"};
        QTest::newRow("cut short: the second rank is missing")
            << framed(0, "x", "", "0\n") + framed(1, "y", "", "0\n").chopped(2) << 2 << QStringList{"x||0", "-"};
        QTest::newRow("no status: missing") << framed(0, "x", "", "") << 1 << QStringList{"-"};
        QTest::newRow("a status that is no number: missing") << framed(0, "x", "", "killed") << 1 << QStringList{"-"};
        QTest::newRow("fewer ranks than asked") << framed(1, "x", "", "0") << 3 << QStringList{"-", "x||0", "-"};
        QTest::newRow("an index out of range is skipped")
            << framed(5, "x", "", "0") + framed(0, "y", "", "1") << 1 << QStringList{"y||1"};
        QTest::newRow("a size past the end") << QByteArray("rankscope-capture 0 out 99\nabc") << 1 << QStringList{"-"};
        QTest::newRow("nothing") << QByteArray() << 2 << QStringList{"-", "-"};
    }
    void splitCaptures() {
        QFETCH(QByteArray, text);
        QFETCH(int, count);
        QFETCH(QStringList, expected);
        QStringList got;
        for (const std::optional<StackCaptureOutput>& capture : splitStackCaptures(text, count))
            got << (capture ? QStringLiteral("%1|%2|%3")
                                  .arg(QString::fromUtf8(capture->out), QString::fromUtf8(capture->err),
                                       QString::number(capture->exitStatus))
                            : QStringLiteral("-"));
        QCOMPARE(got, expected);
    }

    // A node's framed capture of two ranks: the first's stacks and markers, the second's gdb error, each whole.
    void splitRecordedNodeCapture() {
        const QVector<std::optional<StackCaptureOutput>> captures =
            splitStackCaptures(data(QStringLiteral("node-capture.framed")), 2);
        QCOMPARE(captures.size(), 2);
        QVERIFY(captures[0] && captures[1]);
        QCOMPARE(captures[0]->out, data(QStringLiteral("gloo-hang-rank0.gdb.txt")));
        QCOMPARE(captures[0]->exitStatus, 0);
        QCOMPARE(stackCaptureError(captures[0]->out, captures[0]->err, 0), QString());
        QVERIFY(!parseStacks(captures[0]->out).threads.isEmpty());
        QCOMPARE(captures[1]->err, data(QStringLiteral("process-gone.gdb.err")));
        QCOMPARE(stackCaptureError(captures[1]->out, captures[1]->err, captures[1]->exitStatus),
                 QStringLiteral("the process is gone"));
    }

    void rankSets() {
        QCOMPARE(formatRankList({0, 2, 3, 4, 5, 6, 7}), QStringLiteral("0,2-7"));
        QCOMPARE(formatRankList({5}), QStringLiteral("5"));
        QCOMPARE(formatRankList({3, 1, 2, 9}), QStringLiteral("1-3,9"));
    }

    // Frames without a symbol are one node per library: NCCL's and the CUDA driver's unknown frames below the same
    // call stay apart. A frame of a library with a symbol keeps no library.
    void unknownFramesOfTwoLibrariesStayApart() {
        StackTree tree;
        tree.addRank(0, oneThread({"??@libnccl.so.2", "ncclGroupEnd", "main"}));
        tree.addRank(1, oneThread({"??@libcuda.so.1", "ncclGroupEnd", "main"}));
        const auto group = tree.find(QStringLiteral("ncclGroupEnd"));
        QCOMPARE(group.size(), 1);
        QCOMPARE(group.front()->children.size(), 2);
        const QString text = tree.render();
        QVERIFY2(text.contains(QLatin1String("[rank 0] ?? (libnccl.so.2)")) &&
                     text.contains(QLatin1String("[rank 1] ?? (libcuda.so.1)")),
                 qPrintable(text));
        ProcessStacks named = oneThread({"c10d::ProcessGroupGloo::runLoop", "main"});
        named.threads[0].frames[0].library = QStringLiteral("libtorch_cpu.so.1.13");
        StackTree withLibrary;
        withLibrary.addRank(0, named);
        QVERIFY(withLibrary.find(QStringLiteral("runLoop")).front()->library.isEmpty());
    }

    // Where ranks part, the branch of more threads comes first, then the branch of the lower first rank: the
    // odd rank out is at the end, whichever rank it is.
    void branchesByThreadsThenFirstRank() {
        StackTree tree;
        tree.addRank(0, oneThread({"injectFaults", "main"}));
        tree.addRank(1, oneThread({"c10d::Reducer::finalize_backward", "main"}));
        tree.addRank(2, oneThread({"c10d::Reducer::finalize_backward", "main"}));
        const StackNode& main = tree.root().children.front();
        QCOMPARE(main.children.size(), 2);
        QCOMPARE(main.children[0].function, QStringLiteral("c10d::Reducer::finalize_backward"));
        QCOMPARE(main.children[1].function, QStringLiteral("injectFaults"));
        StackTree even;
        even.addRank(3, oneThread({"b", "main"}));
        even.addRank(1, oneThread({"a", "main"}));
        even.addRank(2, oneThread({"c", "main"}));
        const QVector<StackNode>& parts = even.root().children.front().children;
        QCOMPARE(parts.size(), 3);
        QCOMPARE(parts[0].function, QStringLiteral("a")); // rank 1
        QCOMPARE(parts[1].function, QStringLiteral("c")); // rank 2
        QCOMPARE(parts[2].function, QStringLiteral("b")); // rank 3
    }

    // One frame at several lines (ranks at different lines of one function) lists them once each, in order.
    void aFramesLinesAreListedOnceInOrder() {
        StackTree tree;
        tree.addRank(0, oneThread({"step@training.cpp:310", "main"}));
        tree.addRank(1, oneThread({"step@training.cpp:295", "main"}));
        tree.addRank(2, oneThread({"step@training.cpp:310", "main"}));
        QVERIFY2(tree.render().contains(QLatin1String("[ranks 0-2] step at training.cpp:295, training.cpp:310\n")),
                 qPrintable(tree.render()));
        QCOMPARE(StackFrame({"f", "x/sleep.c", 0, {}, false}).location(), QStringLiteral("sleep.c"));
    }

    // A wait's chain is folded only while it is the C library's or the C++ runtime's (std:: too), one chain that
    // every thread of the wait passes through to its end.
    void aWaitChainIsFoldedOnlyWhereItIsOne() {
        StackTree runtime;
        runtime.addRank(0, oneThread({"__futex_wait", "__pthread_cond_wait", "std::condition_variable::wait",
                                      "c10d::ProcessGroupGloo::AsyncWork::wait", "main"}));
        QVERIFY2(runtime.render().contains(QStringLiteral("[rank 0] … 3 frames down to __futex_wait\n")),
                 qPrintable(runtime.render()));
        StackTree unnamed; // frames without a symbol in the C library or the C++ runtime are theirs too
        unnamed.addRank(0, oneThread({"??@libpthread.so.0", "??@libstdc++.so.6",
                                      "c10d::ProcessGroupGloo::AsyncWork::wait", "main"}));
        QVERIFY2(unnamed.render().contains(QStringLiteral("[rank 0] … 2 frames down to ?? (libpthread.so.0)\n")),
                 qPrintable(unnamed.render()));
        // Rank 1's stack ends at the wait itself (its debugger saw no deeper): not every thread goes down the chain.
        StackTree shorter = runtime;
        shorter.addRank(1, oneThread({"c10d::ProcessGroupGloo::AsyncWork::wait", "main"}));
        QVERIFY2(!shorter.render().contains(QLatin1String("frames down to")), qPrintable(shorter.render()));
        // Two runtime branches below the wait: no one chain.
        StackTree forked = runtime;
        forked.addRank(1, oneThread({"__futex_wait", "__poll", "std::condition_variable::wait",
                                     "c10d::ProcessGroupGloo::AsyncWork::wait", "main"}));
        QVERIFY2(forked.render().contains(QLatin1String("[ranks 0-1] std::condition_variable::wait\n")),
                 qPrintable(forked.render()));
    }

    void jsonRoundTrip() {
        StackTree tree = hungGlooTree();
        tree.runId = QStringLiteral("20240101-000000-abcd");
        tree.capturedAt = 1700000000.5;
        tree.addError(2, QStringLiteral("the process is gone"));
        tree.addNote(1, QStringLiteral("node-b: its process was stopped by a signal"));
        const auto back = StackTree::fromJson(tree.toJson());
        QVERIFY(back);
        QCOMPARE(back->notes(), tree.notes());
        QVERIFY2(back->render().contains(QStringLiteral("\nrank 1: node-b: its process was stopped by a signal\n")),
                 qPrintable(back->render()));
        QCOMPARE(back->runId, tree.runId);
        QCOMPARE(back->capturedAt, tree.capturedAt);
        QCOMPARE(back->errors(), tree.errors());
        QCOMPARE(back->render(), tree.render());
        QVERIFY(!StackTree::fromJson(QJsonObject{{"version", 2}}));
        QJsonObject newer = tree.toJson();
        newer.insert("version", 2); // a tree of a later format is not read as this one
        QVERIFY(!StackTree::fromJson(newer));
        // Notes only where there are some.
        QVERIFY(tree.toJson().contains(QLatin1String("notes")));
        QVERIFY(!hungGlooTree().toJson().contains(QLatin1String("notes")));
        // A named frame keeps no library (its name says what it is); a frame without a symbol keeps its own.
        QVERIFY(!tree.toJson()["tree"].toObject()["children"][0].toObject().contains(QLatin1String("library")));
    }
};

QTEST_GUILESS_MAIN(tst_Stacks)
#include "tst_stacks.moc"
