// SPDX-License-Identifier: MIT
// parseHostfile (it takes the whole file, no chunking): every node it returns has a line, every issue a message.
#include "core/hostfile.h"
#include "tests/fuzz/fuzzcommon.h"

using namespace rankscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    const HostfileResult result = parseHostfile(fuzz::inputView(bytes, size));
    if (result.lines.size() != result.nodes.size())
        std::abort();
    for (const JobIssue& issue : result.issues)
        fuzz::touch(issue.toString().toUtf8());
    for (const NodeSpec& node : result.nodes) {
        if (node.host.isEmpty())
            std::abort();
        fuzz::touch(node.rendezvousAddress().toUtf8());
    }
    return 0;
}
