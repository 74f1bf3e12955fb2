// SPDX-License-Identifier: MIT
#include "core/stacks.h"

#include "core/ranklist.h"

#include <QJsonArray>
#include <QRegularExpression>

#include <algorithm>

namespace rankscope {

namespace {

QString fileName(const QString& path) {
    const qsizetype slash = path.lastIndexOf(QLatin1Char('/'));
    return slash < 0 ? path : path.mid(slash + 1);
}

// The position of the `(` that opens the argument list of a gdb frame: the first " (" outside template
// brackets and parentheses of the name ("f<void (int)> (x=1)", "runLoop(int) ()", "operator() (c=...)").
qsizetype argumentsStart(const QString& text) {
    int angle = 0;
    int paren = 0;
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (c == QLatin1Char('<'))
            ++angle;
        else if (c == QLatin1Char('>') && angle > 0 && (i == 0 || text[i - 1] != QLatin1Char('-')))
            --angle;
        else if (c == QLatin1Char('(')) {
            if (angle == 0 && paren == 0 && i > 0 && text[i - 1] == QLatin1Char(' '))
                return i;
            ++paren;
        } else if (c == QLatin1Char(')') && paren > 0)
            --paren;
    }
    return -1;
}

// The `)` that closes the parenthesis at `open`; quoted strings in arguments may hold parentheses.
qsizetype matchingParen(const QString& text, qsizetype open) {
    int depth = 0;
    bool quoted = false;
    for (qsizetype i = open; i < text.size(); ++i) {
        const QChar c = text[i];
        if (quoted) {
            if (c == QLatin1Char('\\'))
                ++i;
            else if (c == QLatin1Char('"'))
                quoted = false;
        } else if (c == QLatin1Char('"'))
            quoted = true;
        else if (c == QLatin1Char('('))
            ++depth;
        else if (c == QLatin1Char(')') && --depth == 0)
            return i;
    }
    return -1;
}

void setLocation(StackFrame& frame, const QString& where) {
    static const QRegularExpression fileLine(QStringLiteral("^(.*?):(\\d+)(?::\\d+)?$"));
    const auto match = fileLine.match(where.trimmed());
    if (match.hasMatch()) {
        frame.file = match.captured(1);
        frame.line = match.captured(2).toInt();
    } else {
        frame.file = where.trimmed();
    }
}

// "0x... in func (args) at file:line", "func (args) at file:line", "0x... in ?? () from lib.so".
StackFrame parseGdbFrame(const QString& rest) {
    static const QRegularExpression address(QStringLiteral("^0x[0-9a-fA-F]+ in "));
    StackFrame frame;
    QString text = rest.trimmed();
    const auto match = address.match(text);
    frame.inlined = !match.hasMatch() && !text.startsWith(QLatin1String("0x"));
    if (match.hasMatch())
        text = text.mid(match.capturedLength());
    QString tail;
    const qsizetype open = argumentsStart(text);
    if (open >= 0) {
        frame.function = text.left(open).trimmed();
        const qsizetype close = matchingParen(text, open);
        tail = close < 0 ? QString() : text.mid(close + 1).trimmed();
    } else {
        // No argument list (a truncated line): the name runs to " at " or " from ".
        qsizetype end = text.indexOf(QLatin1String(" at "));
        if (end < 0)
            end = text.indexOf(QLatin1String(" from "));
        frame.function = end < 0 ? text : text.left(end);
        tail = end < 0 ? QString() : text.mid(end + 1);
    }
    if (tail.startsWith(QLatin1String("at ")))
        setLocation(frame, tail.mid(3));
    else if (tail.startsWith(QLatin1String("from ")))
        frame.library = fileName(tail.mid(5).trimmed());
    frame.function = normaliseFunctionName(frame.function);
    return frame;
}

void orderMainThreadFirst(ProcessStacks& stacks) {
    if (stacks.threads.isEmpty())
        return;
    auto main = std::find_if(stacks.threads.begin(), stacks.threads.end(),
                             [&](const ThreadStack& t) { return stacks.pid != 0 && t.lwp == stacks.pid; });
    if (main == stacks.threads.end())
        main = std::min_element(stacks.threads.begin(), stacks.threads.end(),
                                [](const ThreadStack& a, const ThreadStack& b) { return a.number < b.number; });
    std::rotate(stacks.threads.begin(), main, main + 1);
}

QString nodeKey(const StackFrame& frame) {
    return frame.function == QLatin1String("??") ? QStringLiteral("?? ") + frame.library : frame.function;
}

void sortChildren(StackNode& node) {
    std::stable_sort(node.children.begin(), node.children.end(), [](const StackNode& a, const StackNode& b) {
        if (a.mainThread.isEmpty() != b.mainThread.isEmpty())
            return !a.mainThread.isEmpty();
        if (a.threads.size() != b.threads.size())
            return a.threads.size() > b.threads.size();
        if (a.threads.firstKey() != b.threads.firstKey())
            return a.threads.firstKey() < b.threads.firstKey();
        return a.function < b.function;
    });
    for (StackNode& child : node.children)
        sortChildren(child);
}

QString rankPrefix(const QMap<int, int>& threads) {
    const QVector<int> ranks = threads.keys().toVector();
    int total = 0;
    for (const int count : threads)
        total += count;
    QString text = QStringLiteral("[%1 %2").arg(ranks.size() == 1 ? QStringLiteral("rank") : QStringLiteral("ranks"),
                                                formatRankList(ranks));
    if (total != ranks.size())
        text += QStringLiteral(": %1 threads").arg(total);
    return text + QLatin1Char(']');
}

QString frameText(const StackNode& node) {
    QString text = node.label();
    if (!node.locations.isEmpty())
        text += QStringLiteral(" at ") + node.locations.join(QStringLiteral(", "));
    return text;
}

// A frame of the C library's or the C++ runtime's own: glibc's internal names ("__futex_abstimed_wait_common64",
// "___pthread_cond_clockwait64", "__GI___nanosleep"), the standard library's templates, or a frame without a symbol
// in one of those libraries.
bool isRuntimeFrame(const StackNode& node) {
    if (node.function.startsWith(QLatin1String("__")) || node.function.startsWith(QLatin1String("std::")))
        return true;
    return node.function == QLatin1String("??") &&
           (node.library.startsWith(QLatin1String("libc.so")) || node.library.startsWith(QLatin1String("libpthread")) ||
            node.library.startsWith(QLatin1String("libstdc++")));
}

// The frames below a waiting frame down to the innermost, when they are one chain of the C library's or the C++
// runtime's frames that the same threads pass through (what the wait is made of: a condition variable, a futex,
// nanosleep); empty otherwise: where threads part, or a library of interest is below (NCCL's, CUDA's driver).
QVector<const StackNode*> waitChain(const StackNode& node, bool mainOnly) {
    const auto counts = [mainOnly](const StackNode& n) -> const QMap<int, int>& {
        return mainOnly ? n.mainThread : n.threads;
    };
    QVector<const StackNode*> chain;
    for (const StackNode* at = &node;;) {
        const StackNode* next = nullptr;
        for (const StackNode& child : at->children) {
            if (counts(child).isEmpty())
                continue;
            if (next || counts(child) != counts(node) || !isRuntimeFrame(child))
                return {};
            next = &child;
        }
        if (!next)
            return chain;
        chain.append(next);
        at = next;
    }
}

void renderNode(const StackNode& node, int depth, bool mainOnly, QString& out) {
    const QMap<int, int>& counts = mainOnly ? node.mainThread : node.threads;
    if (counts.isEmpty())
        return;
    const QString indent(depth * 2, QLatin1Char(' '));
    out += indent + rankPrefix(counts) + QLatin1Char(' ') + frameText(node);
    if (node.wait != WaitKind::None)
        out += QStringLiteral("  <-- ") + waitKindName(node.wait);
    out += QLatin1Char('\n');
    // Below a labelled wait, a chain of two frames or more is one line: how many, and the innermost.
    if (node.wait != WaitKind::None) {
        if (const QVector<const StackNode*> chain = waitChain(node, mainOnly); chain.size() > 1) {
            out += indent + QStringLiteral("  %1 … %2 frames down to %3\n")
                                .arg(rankPrefix(counts))
                                .arg(chain.size())
                                .arg(frameText(*chain.back()));
            return;
        }
    }
    for (const StackNode& child : node.children)
        renderNode(child, depth + 1, mainOnly, out);
}

QJsonObject rankCounts(const QMap<int, int>& counts) {
    QJsonObject object;
    for (auto it = counts.cbegin(); it != counts.cend(); ++it)
        object.insert(QString::number(it.key()), it.value());
    return object;
}

QMap<int, int> rankCountsFrom(const QJsonObject& object) {
    QMap<int, int> counts;
    for (auto it = object.begin(); it != object.end(); ++it)
        counts.insert(it.key().toInt(), it.value().toInt());
    return counts;
}

QJsonObject nodeToJson(const StackNode& node) {
    QJsonObject object{{"function", node.function}, {"threads", rankCounts(node.threads)}};
    if (!node.library.isEmpty())
        object.insert("library", node.library);
    if (!node.locations.isEmpty())
        object.insert("locations", QJsonArray::fromStringList(node.locations));
    if (node.wait != WaitKind::None)
        object.insert("wait", waitKindName(node.wait));
    if (!node.mainThread.isEmpty())
        object.insert("main_thread", rankCounts(node.mainThread));
    QJsonArray children;
    for (const StackNode& child : node.children)
        children.append(nodeToJson(child));
    if (!children.isEmpty())
        object.insert("children", children);
    return object;
}

StackNode nodeFromJson(const QJsonObject& object) {
    StackNode node;
    node.function = object.value("function").toString();
    node.library = object.value("library").toString();
    for (const QJsonValue& location : object.value("locations").toArray())
        node.locations.append(location.toString());
    node.wait = classifyWaitFrame(node.function); // derived, so an older file gets today's labels
    node.threads = rankCountsFrom(object.value("threads").toObject());
    node.mainThread = rankCountsFrom(object.value("main_thread").toObject());
    for (const QJsonValue& child : object.value("children").toArray())
        node.children.append(nodeFromJson(child.toObject()));
    return node;
}

void findIn(const StackNode& node, const QString& text, QVector<const StackNode*>& found) {
    if (node.function.contains(text))
        found.append(&node);
    for (const StackNode& child : node.children)
        findIn(child, text, found);
}

} // namespace

QString StackFrame::location() const {
    if (file.isEmpty())
        return {};
    return line > 0 ? QStringLiteral("%1:%2").arg(fileName(file)).arg(line) : fileName(file);
}

QString normaliseFunctionName(const QString& name) {
    QString text = name.trimmed();
    static const QRegularExpression clone(QStringLiteral("\\s*\\[clone [^\\]]*\\]$"));
    text.remove(clone);
    if (text.endsWith(QLatin1String(" const")))
        text.chop(6);
    // A signature without debug info: "ns::f(int, long)". Not "operator()" itself, nor "<lambda()>".
    if (text.endsWith(QLatin1Char(')')) && !text.endsWith(QLatin1String("operator()"))) {
        int depth = 0;
        for (qsizetype i = text.size() - 1; i >= 0; --i) {
            if (text[i] == QLatin1Char(')'))
                ++depth;
            else if (text[i] == QLatin1Char('(') && --depth == 0) {
                if (i > 0)
                    text.truncate(i);
                break;
            }
        }
    }
    return text.trimmed().isEmpty() ? QStringLiteral("??") : text.trimmed();
}

ProcessStacks parseGdbStacks(QByteArrayView bytes) {
    static const QRegularExpression threadHeader(QStringLiteral("^Thread (\\d+) \\((.*)\\):\\s*$"));
    static const QRegularExpression lwp(QStringLiteral("LWP (\\d+)"));
    static const QRegularExpression threadName(QStringLiteral("\"(.*)\"\\)?$"));
    static const QRegularExpression frameLine(QStringLiteral("^#(\\d+)\\s+(.*)$"));
    static const QRegularExpression process(QStringLiteral("\\(process (\\d+)\\)|^Attaching to process (\\d+)"));
    ProcessStacks stacks;
    ThreadStack* current = nullptr;
    QString pending; // a frame line, joined with its wrapped continuations
    const auto flush = [&] {
        if (pending.isEmpty())
            return;
        if (!current) { // a single `bt`: no thread header
            stacks.threads.append(ThreadStack{1, 0, {}, {}});
            current = &stacks.threads.back();
        }
        current->frames.append(parseGdbFrame(pending));
        pending.clear();
    };
    const QStringList lines = QString::fromUtf8(bytes).split(QLatin1Char('\n'));
    for (QString line : lines) {
        if (line.endsWith(QLatin1Char('\r')))
            line.chop(1);
        if (const auto m = frameLine.match(line); m.hasMatch()) {
            flush();
            pending = m.captured(2);
            continue;
        }
        if (const auto m = threadHeader.match(line); m.hasMatch()) {
            flush();
            ThreadStack thread;
            thread.number = m.captured(1).toInt();
            const QString inner = m.captured(2);
            thread.lwp = lwp.match(inner).captured(1).toLongLong();
            thread.name = threadName.match(inner).captured(1);
            if (thread.lwp == 0) // "Thread 1 (process 123)": a process without threads
                thread.lwp = process.match(QLatin1Char('(') + inner + QLatin1Char(')')).captured(1).toLongLong();
            stacks.threads.append(thread);
            current = &stacks.threads.back();
            continue;
        }
        if (const auto m = process.match(line); m.hasMatch() && stacks.pid == 0)
            stacks.pid = (m.captured(1).isEmpty() ? m.captured(2) : m.captured(1)).toLongLong();
        static const QRegularExpression sourceListing(QStringLiteral("^\\d+\\t"));
        if (!pending.isEmpty() && !line.trimmed().isEmpty() && !line.startsWith(QLatin1Char('[')) &&
            !sourceListing.match(line).hasMatch()) {
            // A frame wrapped by gdb (indented continuation) or cut by a terminal (no indentation).
            pending += (line.front().isSpace() ? QStringLiteral(" ") : QString()) + line.trimmed();
            continue;
        }
        flush();
    }
    flush();
    orderMainThreadFirst(stacks);
    return stacks;
}

ProcessStacks parseEuStack(QByteArrayView bytes) {
    static const QRegularExpression pidLine(QStringLiteral("^PID (\\d+)"));
    static const QRegularExpression tidLine(QStringLiteral("^TID (\\d+):"));
    static const QRegularExpression frameLine(
        QStringLiteral("^#(\\d+)\\s+(0x[0-9a-fA-F]+)(?:\\s+(.*?))?(?:\\s+-\\s+(\\S+))?\\s*$"));
    ProcessStacks stacks;
    ThreadStack* current = nullptr;
    const QStringList lines = QString::fromUtf8(bytes).split(QLatin1Char('\n'));
    for (const QString& line : lines) {
        if (const auto m = pidLine.match(line); m.hasMatch()) {
            stacks.pid = m.captured(1).toLongLong();
        } else if (const auto m = tidLine.match(line); m.hasMatch()) {
            stacks.threads.append(ThreadStack{m.captured(1).toInt(), m.captured(1).toLongLong(), {}, {}});
            current = &stacks.threads.back();
        } else if (const auto m = frameLine.match(line); m.hasMatch() && current) {
            StackFrame frame;
            frame.function = normaliseFunctionName(m.captured(3));
            frame.library = fileName(m.captured(4));
            current->frames.append(frame);
        } else if (current && !current->frames.isEmpty() && line.startsWith(QLatin1String("    ")) &&
                   !line.trimmed().isEmpty()) {
            setLocation(current->frames.back(), line); // eu-stack -s: the source line under its frame
        }
    }
    orderMainThreadFirst(stacks);
    return stacks;
}

ProcessStacks parseStacks(QByteArrayView text) {
    static const QRegularExpression euStack(QStringLiteral("(^|\\n)(PID \\d+ - |TID \\d+:)"));
    if (euStack.match(QString::fromUtf8(text.first(std::min<qsizetype>(text.size(), 4096)))).hasMatch())
        return parseEuStack(text);
    return parseGdbStacks(text);
}

QString waitKindName(WaitKind kind) {
    switch (kind) {
    case WaitKind::C10d:
        return QStringLiteral("c10d wait");
    case WaitKind::Gloo:
        return QStringLiteral("gloo wait");
    case WaitKind::Nccl:
        return QStringLiteral("nccl wait");
    case WaitKind::Sleep:
        return QStringLiteral("sleep");
    case WaitKind::None:
        break;
    }
    return {};
}

WaitKind classifyWaitFrame(const QString& function) {
    const QString f = function;
    // c10d: a Work's wait, the TCPStore (rendezvous, barriers), and the DDP reducer finishing the backward
    // pass, which waits there for its buckets' all-reduce. ProcessGroupGloo::runLoop is an idle worker: not
    // a wait the user can act on, so it is left unlabelled.
    if (f.startsWith(QLatin1String("c10d::"))) {
        if (f.contains(QLatin1String("wait"), Qt::CaseInsensitive) || f.contains(QLatin1String("TCPStore")) ||
            f.contains(QLatin1String("Reducer::finalize_backward")) || f.contains(QLatin1String("synchronize")) ||
            f.contains(QLatin1String("barrier")) || f.contains(QLatin1String("Store::get")))
            return WaitKind::C10d;
        return WaitKind::None;
    }
    if (f.startsWith(QLatin1String("gloo::")))
        return f.contains(QLatin1String("wait"), Qt::CaseInsensitive) ? WaitKind::Gloo : WaitKind::None;
    if (f.startsWith(QLatin1String("nccl")) || f.contains(QLatin1String("::nccl")))
        return WaitKind::Nccl;
    static const QRegularExpression sleep(
        QStringLiteral("(^|[_:])(clock_nanosleep|nanosleep|usleep|sleep|sleep_for|sleep_until)(<|$)"));
    if (sleep.match(f).hasMatch())
        return WaitKind::Sleep;
    return WaitKind::None;
}

QString stackCaptureError(QByteArrayView out, QByteArrayView err, int exitStatus) {
    if (!parseStacks(out).threads.isEmpty())
        return {}; // stacks were printed: a warning on stderr about one thread does not matter
    const QString said = QString::fromUtf8(err) + QLatin1Char('\n') + QString::fromUtf8(out);
    static const QRegularExpression ours(QStringLiteral("rankscope: ([^\\n]*)"));
    static const QRegularExpression scope(QStringLiteral("rankscope-ptrace-scope=(\\d*)"));
    if (const auto m = ours.match(said); m.hasMatch())
        return m.captured(1).trimmed(); // the capture script's own sentence: no pid file, gone, no debugger
    if (said.contains(QLatin1String("Operation not permitted")) ||
        said.contains(QLatin1String("ptrace: Permission denied"))) {
        const QString value = scope.match(said).captured(1);
        return QStringLiteral("ptrace not permitted (kernel.yama.ptrace_scope = %1; as root: sysctl -w "
                              "kernel.yama.ptrace_scope=0, or run the container with CAP_SYS_PTRACE)")
            .arg(value.isEmpty() ? QStringLiteral("unknown") : value);
    }
    if (said.contains(QLatin1String("No such process")))
        return QStringLiteral("the process is gone");
    if (exitStatus == 124)
        return QStringLiteral("the debugger did not finish in time");
    if (exitStatus == 127)
        return QStringLiteral("no debugger on the node (install gdb or elfutils' eu-stack)");
    QString first; // the debugger's first word, not the capture command's markers
    for (const QString& line : QString::fromUtf8(err).split(QLatin1Char('\n'))) {
        first = line.trimmed();
        if (!first.isEmpty() && !first.startsWith(QLatin1String("rankscope-")))
            break;
        first.clear();
    }
    return QStringLiteral("no stack in the debugger's output (exit %1%2)")
        .arg(exitStatus)
        .arg(first.isEmpty() ? QString() : QStringLiteral(": ") + first);
}

QVector<std::optional<StackCaptureOutput>> splitStackCaptures(QByteArrayView text, int count) {
    QVector<std::optional<StackCaptureOutput>> captures(std::max(count, 0));
    QVector<int> seen(captures.size(), 0); // bit 0: out, 1: err, 2: rc
    static constexpr QByteArrayView kHeader("rankscope-capture ");
    qsizetype at = text.startsWith(kHeader) ? 0 : text.indexOf(QByteArrayView("\nrankscope-capture "));
    if (at > 0)
        ++at; // past the newline
    while (at >= 0 && at < text.size() && text.sliced(at).startsWith(kHeader)) {
        const qsizetype end = text.indexOf('\n', at);
        if (end < 0)
            break;
        const QList<QByteArray> words =
            text.sliced(at + kHeader.size(), end - at - kHeader.size()).toByteArray().split(' ');
        bool indexOk = false;
        bool sizeOk = false;
        const int index = words.size() == 3 ? words[0].toInt(&indexOk) : -1;
        const qsizetype size = words.size() == 3 ? words[2].trimmed().toLongLong(&sizeOk) : -1;
        if (!indexOk || !sizeOk || size < 0 || size > text.size() - end - 1)
            break; // a header cut short, or a size past the text: nothing after it can be trusted
        const QByteArrayView bytes = text.sliced(end + 1, size);
        at = end + 1 + size;
        if (index < 0 || index >= captures.size())
            continue;
        StackCaptureOutput& capture = captures[index] ? *captures[index] : captures[index].emplace();
        if (words[1] == "out") {
            capture.out = bytes.toByteArray();
            seen[index] |= 1;
        } else if (words[1] == "err") {
            capture.err = bytes.toByteArray();
            seen[index] |= 2;
        } else if (words[1] == "rc") {
            bool statusOk = false;
            const int status = bytes.trimmed().toInt(&statusOk);
            if (statusOk) {
                capture.exitStatus = status;
                seen[index] |= 4;
            }
        }
    }
    for (qsizetype i = 0; i < captures.size(); ++i)
        if (seen[i] != 7)
            captures[i].reset(); // whole or not at all
    return captures;
}

QString stackCaptureNote(QByteArrayView err) {
    const QString said = QString::fromUtf8(err);
    static const QRegularExpression state(QStringLiteral("rankscope-process-state=(\\S)"));
    static const QRegularExpression pid(QStringLiteral("rankscope-pid=(\\d+)"));
    const QString which = state.match(said).captured(1);
    const QString number = pid.match(said).captured(1);
    const QString ofPid = number.isEmpty() ? QString() : QStringLiteral(" (pid %1)").arg(number);
    if (which == QLatin1String("T"))
        return QStringLiteral("its process%1 was stopped by a signal before the capture (state T: SIGSTOP, or SIGTSTP "
                              "from Ctrl-Z in the terminal that started it), and is left so: kill -CONT %2 resumes it")
            .arg(ofPid, number.isEmpty() ? QStringLiteral("PID") : number);
    if (which == QLatin1String("t"))
        return QStringLiteral("its process%1 was stopped by a debugger that traces it (state t)").arg(ofPid);
    return {};
}

QString StackNode::label() const {
    return function == QLatin1String("??") && !library.isEmpty() ? QStringLiteral("?? (%1)").arg(library) : function;
}

void StackTree::addRank(int rank, const ProcessStacks& stacks) {
    for (qsizetype t = 0; t < stacks.threads.size(); ++t) {
        const bool main = t == 0;
        StackNode* node = &m_root;
        node->threads[rank] += 1;
        if (main)
            node->mainThread[rank] = 1;
        const QVector<StackFrame>& frames = stacks.threads[t].frames;
        for (auto frame = frames.crbegin(); frame != frames.crend(); ++frame) {
            const QString key = nodeKey(*frame);
            auto child = std::find_if(node->children.begin(), node->children.end(),
                                      [&](const StackNode& c) { return nodeKey({c.function, {}, 0, c.library}) == key; });
            if (child == node->children.end()) {
                StackNode fresh;
                fresh.function = frame->function;
                fresh.library = frame->function == QLatin1String("??") ? frame->library : QString();
                fresh.wait = classifyWaitFrame(frame->function);
                node->children.append(fresh);
                child = node->children.end() - 1;
            }
            node = &*child;
            node->threads[rank] += 1;
            if (main)
                node->mainThread[rank] = 1;
            if (const QString where = frame->location(); !where.isEmpty() && !node->locations.contains(where)) {
                node->locations.append(where);
                node->locations.sort();
            }
        }
    }
    sortChildren(m_root);
}

QVector<const StackNode*> StackTree::find(const QString& text) const {
    QVector<const StackNode*> found;
    for (const StackNode& child : m_root.children)
        findIn(child, text, found);
    return found;
}

QString StackTree::render(bool mainThreadsOnly) const {
    QString out;
    for (const StackNode& child : m_root.children)
        renderNode(child, 0, mainThreadsOnly, out);
    for (auto it = m_notes.cbegin(); it != m_notes.cend(); ++it)
        out += QStringLiteral("rank %1: %2\n").arg(it.key()).arg(it.value());
    for (auto it = m_errors.cbegin(); it != m_errors.cend(); ++it)
        out += QStringLiteral("rank %1: no stacks: %2\n").arg(it.key()).arg(it.value());
    return out;
}

int StackTree::helperThreads() const {
    int helpers = 0;
    for (auto it = m_root.threads.cbegin(); it != m_root.threads.cend(); ++it)
        helpers += it.value() - m_root.mainThread.value(it.key());
    return helpers;
}

QJsonObject StackTree::toJson() const {
    const auto byRank = [](const QMap<int, QString>& messages) {
        QJsonObject object;
        for (auto it = messages.cbegin(); it != messages.cend(); ++it)
            object.insert(QString::number(it.key()), it.value());
        return object;
    };
    QJsonObject tree{{"version", 1},
                     {"run", runId},
                     {"captured_at", capturedAt},
                     {"tree", nodeToJson(m_root)},
                     {"errors", byRank(m_errors)}};
    if (!m_notes.isEmpty())
        tree.insert("notes", byRank(m_notes));
    return tree;
}

std::optional<StackTree> StackTree::fromJson(const QJsonObject& object) {
    if (object.value("version").toInt() != 1 || !object.value("tree").isObject())
        return std::nullopt;
    StackTree tree;
    tree.runId = object.value("run").toString();
    tree.capturedAt = object.value("captured_at").toDouble();
    tree.m_root = nodeFromJson(object.value("tree").toObject());
    const auto byRank = [&object](const char* key, QMap<int, QString>& messages) {
        const QJsonObject stored = object.value(QLatin1String(key)).toObject();
        for (auto it = stored.begin(); it != stored.end(); ++it)
            messages.insert(it.key().toInt(), it.value().toString());
    };
    byRank("errors", tree.m_errors);
    byRank("notes", tree.m_notes);
    return tree;
}

} // namespace rankscope
