// SPDX-License-Identifier: MIT
// DeployManifest::parse (a whole manifest, no chunking); a manifest it accepts must serialize back to one that
// parses to the same entries, with safe paths only.
#include "core/deploymanifest.h"
#include "tests/fuzz/fuzzcommon.h"

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    QString error;
    const std::optional<DeployManifest> manifest = DeployManifest::parse(fuzz::inputView(bytes, size), &error);
    if (!manifest) {
        fuzz::touch(error.toUtf8());
        return 0;
    }
    for (const ManifestEntry& entry : manifest->entries()) {
        if (!DeployManifest::isSafeRelativePath(entry.path))
            std::abort();
    }
    const QByteArray text = manifest->serialize();
    const std::optional<DeployManifest> again = DeployManifest::parse(text, &error);
    if (!again || again->serialize() != text || again->hash() != manifest->hash())
        std::abort();
    if (!manifest->changedFrom(*again).isEmpty())
        std::abort();
    return 0;
}
