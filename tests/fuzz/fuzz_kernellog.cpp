// SPDX-License-Identifier: MIT
// KernelLogParser (dmesg, journalctl, syslog and /dev/kmsg lines): OOM kills and Xids must not depend on chunking,
// and the verdict on a rank's death, built from them, must hold up on any log.
#include "core/kernellog.h"
#include "core/kernelverdict.h"
#include "tests/fuzz/fuzzcommon.h"

#include <cmath>

using namespace rankscope;

namespace {

QByteArray number(double value) {
    return std::isnan(value) ? QByteArray("-") : QByteArray::number(value, 'g', 17);
}

QByteArray describe(const KernelLogParser& parser) {
    QByteArray out;
    for (const OomKill& k : parser.oomKills())
        out += "kill " + QByteArray::number(k.pid) + ' ' + k.command.toUtf8() + ' ' + number(k.time) + ' ' +
               QByteArray::number(k.cgroupLimit) + ' ' + k.constraint.toUtf8() + ' ' + k.memcg.toUtf8() + ' ' +
               k.invokedBy.toUtf8() + ' ' + QByteArray::number(k.totalVmKiB) + ' ' + QByteArray::number(k.anonRssKiB) +
               ' ' + QByteArray::number(k.fileRssKiB) + ' ' + QByteArray::number(k.shmemRssKiB) + ' ' +
               QByteArray::number(k.uid) + ' ' + QByteArray::number(k.line) + '\n';
    for (const XidError& x : parser.xids())
        out += "xid " + QByteArray::number(x.code) + ' ' + x.pciAddress.toUtf8() + ' ' + QByteArray::number(x.pid) +
               ' ' + x.process.toUtf8() + ' ' + number(x.time) + ' ' + x.detail.toUtf8() + ' ' +
               QByteArray::number(x.line) + '\n';
    return out + "lines " + QByteArray::number(parser.lineCount());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const QByteArrayView data = fuzz::inputView(bytes, size);
    const fuzz::Cuts cuts = fuzz::cutsFor(data);
    const double boot = (cuts.hash & 1) ? 1700000000.0 : kUnknownTime;
    KernelLogParser whole(boot);
    whole.feed(data);
    whole.finish();
    KernelLogParser pieces(boot);
    fuzz::feedInPieces(data, cuts, [&](QByteArrayView piece) { pieces.feed(piece); });
    pieces.finish();
    fuzz::requireSame(describe(whole), describe(pieces), cuts, "KernelLogParser");

    KernelLogCapture capture;
    capture.host = QStringLiteral("gpu-a");
    capture.source = QStringLiteral("dmesg");
    capture.bootTime = boot;
    capture.text = data.toByteArray();
    RankDeath death;
    death.rank = 1;
    death.host = capture.host;
    death.pid = static_cast<qint64>(cuts.hash % 100000);
    death.signal = (cuts.hash >> 8) % 2 ? 9 : 6;
    death.diedAt = 1700000000.0 + static_cast<double>((cuts.hash >> 16) % 100000);
    death.runStarted = death.diedAt - 3600;
    fuzz::touch(kernelLogVerdict(death, capture).toUtf8());
    return 0;
}
