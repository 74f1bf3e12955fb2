// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArrayView>
#include <QJsonObject>
#include <QMap>
#include <QString>
#include <QStringList>
#include <QVector>

#include <optional>

namespace rankscope {

// One frame of a native stack, as gdb or eu-stack prints it.
struct StackFrame {
    QString function; // normalised: no arguments, no address, no signature; "??" when there is no symbol
    QString file;     // as the debugger printed it (may be relative: ../sysdeps/...), empty when unknown
    int line = 0;
    QString library;      // "from LIB" (gdb) or "- MODULE" (eu-stack), the file name only
    bool inlined = false; // gdb prints inlined frames without an address

    // "training.cpp:295" (the file's name only), empty when unknown.
    [[nodiscard]] QString location() const;
};

struct ThreadStack {
    int number = 0; // gdb's thread number, or eu-stack's TID
    qint64 lwp = 0; // the kernel's thread id
    QString name;
    QVector<StackFrame> frames; // innermost first (#0 first), as the debuggers print them
};

// Every thread of one process. The main thread (its LWP is the process id; gdb's thread 1 otherwise) is
// always threads[0]: in a hung trainer it is the one that says which collective or sleep the rank is in.
struct ProcessStacks {
    qint64 pid = 0;
    QVector<ThreadStack> threads;
};

// gdb's `thread apply all bt` (also a single `bt`), or eu-stack's output; which one is recognised from the
// text. Lines wrapped by a terminal are joined again; gdb's chatter ([New LWP], warnings) is skipped.
[[nodiscard]] ProcessStacks parseStacks(QByteArrayView text);
[[nodiscard]] ProcessStacks parseGdbStacks(QByteArrayView text);
[[nodiscard]] ProcessStacks parseEuStack(QByteArrayView text);

// "c10d::ProcessGroupGloo::runLoop(int) const [clone .isra.0]" -> "c10d::ProcessGroupGloo::runLoop".
[[nodiscard]] QString normaliseFunctionName(const QString& name);

// What a frame waits for, when it is a waiting frame of the libraries a hang is about.
enum class WaitKind { None, C10d, Gloo, Nccl, Sleep };
[[nodiscard]] QString waitKindName(WaitKind kind); // "", "c10d wait", "gloo wait", "nccl wait", "sleep"
[[nodiscard]] WaitKind classifyWaitFrame(const QString& function);

// Why a capture gave no stacks, in one sentence, from the debugger's output and exit status; empty when the
// output holds stacks. Recognises a missing debugger, ptrace refused (kernel.yama.ptrace_scope, containers
// without CAP_SYS_PTRACE), a process that is gone, and a timeout (exit 124 of `timeout`).
[[nodiscard]] QString stackCaptureError(QByteArrayView out, QByteArrayView err, int exitStatus);
// What the capture found of the process itself, from the capture command's stderr (`rankscope-process-state=S`,
// `rankscope-pid=N`): a rank stopped by a signal before it (state T: SIGSTOP, or SIGTSTP from Ctrl-Z in the
// terminal that started it) is the hang, not a collective, and it is left stopped; one traced by another debugger
// (t) is said so. Empty for a process that was running or sleeping.
[[nodiscard]] QString stackCaptureNote(QByteArrayView err);

// What one rank's capture printed, as a node's capture of several ranks at once frames it on its stdout: for each
// rank in turn, each of its streams as a header line "rankscope-capture INDEX out|err|rc SIZE" followed by SIZE
// bytes (rc: the capture's exit status as text). splitStackCaptures returns `count` entries, in index order; an
// index the text does not hold (whole) is empty. Whatever precedes the first header is skipped.
struct StackCaptureOutput {
    QByteArray out;
    QByteArray err;
    int exitStatus = -1;
};
[[nodiscard]] QVector<std::optional<StackCaptureOutput>> splitStackCaptures(QByteArrayView text, int count);

// One node of the merged tree: a frame (by normalised function name) reached by the same path of outer
// frames, with the ranks whose threads pass through it.
struct StackNode {
    QString function;
    QString library;     // for "??" frames: which library they are in (they are told apart by it)
    QStringList locations; // distinct "file:line" seen here, sorted
    WaitKind wait = WaitKind::None;
    QMap<int, int> threads; // rank -> how many of its threads pass through this frame
    QMap<int, int> mainThread; // rank -> 1 when that rank's main thread passes through this frame
    QVector<StackNode> children;

    [[nodiscard]] QVector<int> ranks() const { return threads.keys().toVector(); }
    [[nodiscard]] QString label() const; // "func" or "?? (libfoo.so)"
};

// The stacks of every rank merged into one tree, root (no frame) -> outermost frames -> ... -> innermost:
// the parallel stack view of MPI debuggers. Children that hold a main thread come first, then the ones with
// more ranks: the threads that matter in a hang (the main threads, in a collective or sleeping) lead, and
// helper threads (Gloo loops, heartbeat, signal handler) follow, all kept.
class StackTree final {
public:
    void addRank(int rank, const ProcessStacks& stacks);
    void addError(int rank, const QString& message) { m_errors.insert(rank, message); }
    // What the capture said of a rank besides its stacks (stackCaptureNote).
    void addNote(int rank, const QString& message) { m_notes.insert(rank, message); }

    [[nodiscard]] const StackNode& root() const { return m_root; }
    [[nodiscard]] const QMap<int, QString>& errors() const { return m_errors; }
    [[nodiscard]] const QMap<int, QString>& notes() const { return m_notes; }
    [[nodiscard]] QVector<int> ranks() const { return m_root.ranks(); }
    [[nodiscard]] bool isEmpty() const { return m_root.children.isEmpty(); }

    // The nodes whose function contains `text`, depth first (for tests and front ends that search).
    [[nodiscard]] QVector<const StackNode*> find(const QString& text) const;

    // Indented text: one line per node, `[ranks 0,2-7]` (with a thread count when it differs), the frame,
    // its location and its wait label. A chain of nodes shared by the same ranks is printed as it is, so
    // the point where ranks split is where the rank sets change; below a labelled wait, though, a chain of
    // frames that the same threads share to the end is one line (`… 6 frames down to
    // __futex_abstimed_wait_common64 at futex-internal.c:57`): the label says what they wait for, and toJson()
    // keeps every frame. Errors follow.
    [[nodiscard]] QString render(bool mainThreadsOnly = false) const;
    // How many threads of the ranks are not their main thread (Gloo's loops, heartbeats, NCCL's proxies).
    [[nodiscard]] int helperThreads() const;

    [[nodiscard]] QJsonObject toJson() const;
    [[nodiscard]] static std::optional<StackTree> fromJson(const QJsonObject& object);

    double capturedAt = 0.0; // Unix seconds
    QString runId;

private:
    StackNode m_root;
    QMap<int, QString> m_errors;
    QMap<int, QString> m_notes;
};

} // namespace rankscope
