// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QMetaType>
#include <QString>

#include <limits>
#include <optional>

namespace rankscope {

inline constexpr double kUnknownTime = std::numeric_limits<double>::quiet_NaN();

// One kill by the kernel's OOM killer, from its "oom-kill:constraint=…,task=COMM,pid=PID" summary and its
// "[Memory cgroup ]Out of memory: Killed process PID (COMM) total-vm:…" line, merged when both are there. What
// the log did not say is -1, empty or NaN.
struct OomKill {
    double time = kUnknownTime; // Unix seconds; NaN when the line's stamp is no wall-clock time
    qint64 pid = -1;
    QString command;          // the task's name as the kernel keeps it: at most 15 bytes ("rankscope-train")
    bool cgroupLimit = false; // a memory cgroup's limit was reached, not the node's memory
    QString constraint;       // CONSTRAINT_NONE, CONSTRAINT_MEMCG, CONSTRAINT_CPUSET, CONSTRAINT_MEMORY_POLICY
    QString memcg;            // the cgroup whose limit was reached (oom_memcg=), else the task's (task_memcg=)
    QString invokedBy;        // the task whose allocation invoked the OOM killer ("python3 invoked oom-killer")
    qint64 totalVmKiB = -1;
    qint64 anonRssKiB = -1;
    qint64 fileRssKiB = -1;
    qint64 shmemRssKiB = -1;
    qint64 uid = -1;
    qint64 line = 0; // 1-based, of the first line that named the kill
};

// "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus." and the older forms
// without pid and name. pid is -1 when the driver printed none or '<unknown>'.
struct XidError {
    double time = kUnknownTime;
    QString pciAddress; // "0000:3b:00"
    int code = -1;
    qint64 pid = -1;
    QString process; // name=…, empty when none or <unknown>
    QString detail;  // the rest of the message
    qint64 line = 0;
};

// What an Xid code means and what to do, in one phrase; empty for codes not described here (NVIDIA's Xid
// catalog has them all). Covers 13, 31, 43, 45, 48, 63, 64, 74, 79, 92, 94, 95, 119.
[[nodiscard]] QString xidMeaning(int code);

// The kernel log as `dmesg` prints it (`[ 1234.567890]` stamps, `--time-format iso`, `-T`, `-x`, `-r`),
// `journalctl -k -o short-iso[-precise]`, syslog files (`May 15 23:09:30 host kernel: …`) and /dev/kmsg records,
// fed in byte chunks that may end anywhere: a line is parsed once its '\n' arrives (or at finish()), so the
// result never depends on the chunking. Finds OOM kills and NVIDIA Xid errors; every other line is skipped
// after one look for a keyword. Times: ISO stamps are absolute; `[seconds]` stamps and /dev/kmsg's
// microseconds count from boot and become Unix times only with the node's boot time; `-T`'s local time of an
// unknown zone and syslog's year-less dates stay unknown (a time that is not in the log is never guessed).
class KernelLogParser final {
public:
    static constexpr qsizetype kMaxLineBytes = 64 * 1024; // the rest of a longer line is dropped
    static constexpr qsizetype kMaxFacts = 10000;         // per kind: a flood of Xids stays bounded

    explicit KernelLogParser(double bootTime = kUnknownTime);

    void feed(QByteArrayView chunk);
    void finish(); // the unterminated last line; facts are kept

    [[nodiscard]] const QList<OomKill>& oomKills() const { return m_kills; }
    [[nodiscard]] const QList<XidError>& xids() const { return m_xids; }
    [[nodiscard]] qint64 lineCount() const { return m_lineNumber; }

private:
    void takeLine(QByteArrayView raw);
    void takeMessage(QByteArrayView message, double time);
    void takeSummary(QByteArrayView message, double time);
    void takeKilled(QByteArrayView message, qsizetype at, double time);
    void takeXid(QByteArrayView message, qsizetype at, double time);
    void appendPartial(QByteArrayView bytes);

    double m_bootTime;
    QByteArray m_partial;
    QByteArray m_scratch;
    bool m_inLine = false;
    qint64 m_lineNumber = 0;
    QList<OomKill> m_kills;
    QList<XidError> m_xids;
    qsizetype m_pendingSummary = -1; // an "oom-kill:" line whose "Killed process" line may follow
    qint64 m_cgroupVictim = -1;      // the pid of an old kernel's "Memory cgroup out of memory: Kill process PID"
    QString m_invoker;               // from "COMM invoked oom-killer", for the kill that follows
    QString m_fallenGpu;             // "NVRM: The NVIDIA GPU ADDR", before a multi-line "fallen off the bus"
    double m_fallenGpuTime = kUnknownTime;
};

// One read of a node's kernel log after a rank died by a signal: what was read and how, or why nothing could
// be. Saved in the run store (runs/ID/kernel-nodeN.json) and diagnosed from there, live or offline.
struct KernelLogCapture {
    int node = -1;
    QString host;
    QString source;  // the command that read it: "dmesg --time-format iso", "dmesg", "journalctl -k"
    QString problem; // why it could not be read, one sentence naming the host and what to do; empty when read
    double readAt = kUnknownTime;   // the node's clock when it was read (Unix seconds)
    double bootTime = kUnknownTime; // the node's boot time, for `[seconds]` stamps
    QByteArray text;                // the newest bytes of what was read
    qint64 totalBytes = 0;          // what the command printed; more than text.size() when older lines were left out
    QHash<int, qint64> rankPids;    // the node's ranks and their pids (the supervisor's rankR.pid)

    [[nodiscard]] bool wasRead() const { return problem.isEmpty(); }
    [[nodiscard]] QJsonObject toJson() const; // the text as "lines", one string per line
    [[nodiscard]] static std::optional<KernelLogCapture> fromJson(const QJsonObject& object);
};

} // namespace rankscope

// Queued from a node worker's thread to the engine's (remote/nodeworker.h, remote/kernellogwatch.h).
Q_DECLARE_METATYPE(rankscope::KernelLogCapture)
