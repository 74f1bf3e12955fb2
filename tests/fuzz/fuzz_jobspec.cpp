// SPDX-License-Identifier: MIT
// parseJob (a whole JSON document, no chunking); a job it accepts must survive jobToJson and back unchanged, but
// for the order of "env": jobToJson returns a QJsonObject, whose keys are sorted.
#include "core/jobspec.h"
#include "tests/fuzz/fuzzcommon.h"

#include <QJsonDocument>

#include <algorithm>

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const JobParseResult result = parseJob(fuzz::inputView(bytes, size));
    for (const JobIssue& issue : result.issues)
        fuzz::touch(issue.toString().toUtf8());
    if (!result.ok())
        return 0;
    const QByteArray json = QJsonDocument(jobToJson(*result.job)).toJson();
    const JobParseResult again = parseJob(json);
    JobSpec before = *result.job;
    std::sort(before.env.begin(), before.env.end());
    if (!again.ok() || *again.job != before) {
        std::fprintf(stderr, "jobToJson does not round-trip:\n%s\n", json.constData());
        std::abort();
    }
    return 0;
}
