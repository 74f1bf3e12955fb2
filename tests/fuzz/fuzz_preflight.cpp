// SPDX-License-Identifier: MIT
// parseProbeOutput (it takes the probe's whole output, no chunking), its JSON, and the NCCL_SOCKET_IFNAME advice
// over what it found.
#include "core/preflight.h"
#include "tests/fuzz/fuzzcommon.h"

#include <QJsonDocument>

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const ProbeReport report = parseProbeOutput(fuzz::inputView(bytes, size));
    fuzz::touch(QJsonDocument(probeReportToJson(report)).toJson(QJsonDocument::Compact));
    const QString rendezvous =
        report.interfaces.isEmpty() ? QStringLiteral("10.0.0.1") : report.interfaces.front().address;
    const SocketIfnameAdvice advice = adviseSocketIfname(report.interfaces, rendezvous, report.hostname);
    fuzz::touch(advice.suggestion.toUtf8());
    return 0;
}
