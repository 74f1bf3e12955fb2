// SPDX-License-Identifier: MIT
#pragma once

#include <QByteArray>
#include <QByteArrayView>

namespace rankscope {

// Whose numbering the rank of a launcher's prefix is.
enum class PrefixRank : quint8 {
    Launcher, // the launcher's own count of the run's processes: Open MPI's "[1,3]<stdout>:", srun's "3: "
    // torchrun's "[default3]:" (any role name): the rank on its node, LOCAL_RANK. With more nodes than one, several
    // processes of the run have it, so it is reported as a local rank, never as a rank.
    Local,
    // PyTorch's own "[rank3]:": the process's rank in the default process group, the run's rank, where a rank in a
    // process group named in the text may differ from it.
    Run,
};

// A log line without what launchers and terminals put around the program's own text.
struct StrippedLine {
    QByteArrayView text;
    int rank = -1; // the rank named by a prefix ("[1,3]<stdout>:", "[default3]:", "[rank3]:"); -1 when none does
    int pid = -1;  // the process a prefix names instead of a rank (Ray's "(RayTrainWorker pid=1234, ip=…)"); else -1
    PrefixRank rankKind = PrefixRank::Launcher; // what `rank` counts
};

namespace detail {
[[nodiscard]] StrippedLine stripLogPrefixes(QByteArrayView line); // stripLogPrefix's work, out of line
} // namespace detail

// Removes launcher prefixes from the front of a line, repeatedly (a line can carry several, e.g. a timestamp
// and then "[rank3]:"): Open MPI's "[JOB,RANK]<stdout>:", torchrun's "[default3]:" (torchrun prints the local
// rank there), "[rank3]:", Slurm's `srun --label` ("3: ", " 3: "), Ray's "(pid=…)" and "(Worker pid=…, ip=…)",
// timestamps "[2024-05-08 08:47:31,261] ", "2025-11-12 20:42:20,261 - INFO - " and "18:11:06.680 ". Glog and c10
// prefixes
// ("[E ProcessGroupNCCL.cpp:458]") are kept: they are part of the message. No allocation, no regular expression.
// Every prefix starts with '[', '(', a digit or a space: a line that starts otherwise (most lines) is told without a
// call.
[[nodiscard]] inline StrippedLine stripLogPrefix(QByteArrayView line) {
    const auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
    if (line.isEmpty() || (line.front() != '[' && line.front() != '(' && line.front() != ' ' && !isDigit(line.front())))
        return {line, -1};
    if (line.front() == ' ') { // an aligned srun label, or (far more often) an indented line
        qsizetype i = 1;
        while (i < line.size() && line[i] == ' ')
            ++i;
        if (i == line.size() || !isDigit(line[i]))
            return {line, -1};
    }
    return detail::stripLogPrefixes(line);
}

// What a terminal would show of a line: the text after the last carriage return that is followed by text
// (progress bars redraw with '\r'), without ANSI escape sequences. Returns `line` itself when it has neither;
// otherwise the cleaned bytes are written into `scratch` and a view of them is returned.
[[nodiscard]] QByteArrayView cleanTerminalArtifacts(QByteArrayView line, QByteArray& scratch);

} // namespace rankscope
